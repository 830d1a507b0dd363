"""``echs bb get|set|ls|rm|watch`` against a real daemon: entry objects with ``--json``, the
human output, exit codes (1: refused, with the error code first; 2: usage, e.g. bad JSON),
a failed compare-and-set changing nothing, and ``watch`` streaming JSON Lines (replay with
``--since``, then live) until Ctrl-C."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import trio

from tests.cli.helpers import ECHS, WAIT_S, LineReader, clean_env, echs

ENTRY_FIELDS = {"key", "value", "version", "writer", "updated_at"}


def ok_json(state: Path, *args: str, input: str | None = None) -> Any:
    result = echs(state, "bb", *args, "--json", input=input)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_set_get_ls_rm(state: Path) -> None:
    entry = ok_json(state, "set", "cli/plan", '{"steps": ["a", "b"]}')
    assert set(entry) == ENTRY_FIELDS and entry["version"] == 1 and entry["writer"] is None
    assert entry["value"] == {"steps": ["a", "b"]}
    assert ok_json(state, "get", "cli/plan") == entry
    human = echs(state, "bb", "get", "cli/plan")
    assert human.returncode == 0 and json.loads(human.stdout) == {"steps": ["a", "b"]}

    updated = echs(state, "bb", "set", "cli/plan", '"done"', "--if-version", "1")
    assert updated.returncode == 0 and updated.stdout == "cli/plan: version 2\n"
    assert ok_json(state, "set", "cli/other", "-", input='[1, 2, null]')["value"] == [1, 2, None]  # from stdin
    assert ok_json(state, "set", "cli/null", "null")["value"] is None
    assert ok_json(state, "set", "clix", "3")["version"] == 1

    listed = ok_json(state, "ls", "cli/")
    assert [e["key"] for e in listed] == ["cli/null", "cli/other", "cli/plan"] and all(set(e) == ENTRY_FIELDS for e in listed)
    assert "clix" in [e["key"] for e in ok_json(state, "ls")]
    table = echs(state, "bb", "ls", "cli/").stdout.splitlines()
    assert table[0].split() == ["KEY", "VERSION", "WRITER", "UPDATED", "VALUE"]
    assert table[3].split()[:3] == ["cli/plan", "2", "-"] and table[3].endswith('"done"')
    assert echs(state, "bb", "ls", "nothing/here").stdout == "no entries under 'nothing/here'\n"

    removed = ok_json(state, "rm", "cli/other")
    assert removed["deleted"] is True and removed["value"] is None and removed["version"] == 2
    gone = echs(state, "bb", "get", "cli/other")
    assert gone.returncode == 1 and gone.stdout == "" and gone.stderr.startswith("echs: not_found: no blackboard entry 'cli/other'")
    assert echs(state, "bb", "rm", "cli/other").returncode == 1
    assert ok_json(state, "set", "cli/other", "1", "--if-version", "0")["version"] == 3  # versions go on


def test_failed_compare_and_set_exits_1_and_changes_nothing(state: Path) -> None:
    ok_json(state, "set", "cas/k", '"first"')
    for args in (("set", "cas/k", '"second"', "--if-version", "0"), ("set", "cas/k", '"second"', "--if-version", "7"), ("rm", "cas/k", "--if-version", "2")):
        refused = echs(state, "bb", *args, "--json")
        assert refused.returncode == 1 and refused.stdout == ""
        assert refused.stderr.startswith("echs: conflict: blackboard key 'cas/k' is at version 1")
    entry = ok_json(state, "get", "cas/k")
    assert (entry["value"], entry["version"]) == ("first", 1)


def test_bad_input_gets_clear_errors(state: Path) -> None:
    bad_json = echs(state, "bb", "set", "bad/k", "{not json")
    assert bad_json.returncode == 2 and "not valid JSON" in bad_json.stderr
    bare_word = echs(state, "bb", "set", "bad/k", "hello")
    assert bare_word.returncode == 2 and "quote a string" in bare_word.stderr
    assert echs(state, "bb", "set", "bad/k", "NaN").returncode == 2
    assert echs(state, "bb", "set", "bad/k", "1", "--if-version", "-1").returncode == 2
    huge = echs(state, "bb", "set", "bad/k", "-", input=json.dumps("x" * (1024 * 1024 + 1)))
    assert huge.returncode == 1 and "bad_request: value is 1,048,579 bytes as JSON; the limit is 1,048,576 bytes" in huge.stderr
    control = echs(state, "bb", "set", "bad\x01k", "1")
    assert control.returncode == 1 and "control characters" in control.stderr
    long_key = echs(state, "bb", "get", "k" * 600)
    assert long_key.returncode == 1 and "the limit is 512 bytes" in long_key.stderr
    assert echs(state, "bb", "get").returncode == 2  # KEY missing
    assert echs(state, "bb", "get", "bad/k").returncode == 1  # nothing was written


async def test_watch_replays_then_streams_live_until_ctrl_c(state: Path) -> None:
    ok_json(state, "set", "watch/a", "1")
    ok_json(state, "set", "other/x", "1")
    ok_json(state, "set", "watch/b", '{"n": 2}')
    command = [ECHS, "--state-dir", str(state), "bb", "watch", "watch/", "--since", "0"]
    process = await trio.lowlevel.open_process(command, env=clean_env(state.parent), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    watcher = LineReader(process)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(watcher.read)
        await watcher.wait_until(lambda lines: len(lines) >= 2)  # the replay: both watch/ keys, not other/
        await trio.to_thread.run_sync(lambda: ok_json(state, "set", "watch/a", "3"))
        await trio.to_thread.run_sync(lambda: ok_json(state, "rm", "watch/b"))
        await watcher.wait_until(lambda lines: len(lines) >= 4)
        process.send_signal(signal.SIGINT)
        with trio.fail_after(WAIT_S):
            assert await process.wait() == 0
    shown = [(line["key"], line["value"], line["version"], line["deleted"]) for line in watcher.lines]
    assert shown == [("watch/a", 1, 1, False), ("watch/b", {"n": 2}, 1, False), ("watch/a", 3, 2, False), ("watch/b", None, 2, True)]
    seqs = [line["seq"] for line in watcher.lines]
    assert seqs == sorted(seqs) and len(set(seqs)) == 4
    assert all(ENTRY_FIELDS <= set(line) and line["writer"] is None for line in watcher.lines)
