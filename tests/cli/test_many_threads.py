"""Living with many threads: ids abbreviated to a unique prefix in every verb, ``ls``
with ``--state``/``--limit`` (newest first), ``rm`` and ``tree``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trio

from tests.cli.helpers import client_for, echs, gate_command, new_thread, of_type, wait_event
from tests.helpers import conversation, mock_directive


def ok_json(state: Path, *args: str) -> Any:
    result = echs(state, *args, "--json")
    assert result.returncode == 0, (args, result.stderr)
    return json.loads(result.stdout)


def unique_prefix(state: Path, tid: str) -> str:
    """The shortest prefix of ``tid``'s hex part that no other thread shares."""
    others = [t["thread_id"] for t in ok_json(state, "ls") if t["thread_id"] != tid]
    for length in range(1, 17):
        prefix = tid[: 4 + length]
        if not any(other.startswith(prefix) for other in others):
            return prefix[4:]
    raise AssertionError("no unique prefix")


def test_every_verb_takes_a_unique_prefix(state: Path) -> None:
    tid = new_thread(state)
    short = unique_prefix(state, tid)
    assert ok_json(state, "show", short)["thread_id"] == tid
    assert ok_json(state, "show", "thr_" + short)["thread_id"] == tid
    assert ok_json(state, "show", short.upper())["thread_id"] == tid
    assert echs(state, "send", short, "by prefix", "--wait").stdout == "mock reply to: by prefix\n"
    assert ok_json(state, "config", short, "reasoning=low")["config"]["reasoning"] == "low"
    assert conversation(ok_json(state, "history", short))[0]["content"][0]["text"] == "by prefix"
    assert echs(state, "events", short, "--json").stdout.count(tid) > 3
    assert ok_json(state, "interrupt", short)["interrupted"] is False
    assert ok_json(state, "approvals", short) == []
    child = ok_json(state, "new", "--parent", short)["thread_id"]
    assert ok_json(state, "show", child)["parent"] == tid
    short = unique_prefix(state, tid)  # the child's id may share the old one
    assert ok_json(state, "tree", short)[0]["children"][0]["thread_id"] == child
    assert ok_json(state, "pause", short)["state"] == "paused"
    assert ok_json(state, "resume", short)["state"] == "idle"


def test_unknown_and_ambiguous_prefixes_are_clear_errors(state: Path) -> None:
    first_digits: set[str] = set()
    while True:  # two threads whose ids share their first hex digit (17 at most)
        digit = new_thread(state)[4]
        if digit in first_digits:
            break
        first_digits.add(digit)
    unknown = echs(state, "show", "thr_zzzz")
    assert unknown.returncode == 1 and "no thread id starts with 'thr_zzzz'" in unknown.stderr
    ambiguous = echs(state, "show", digit)
    assert ambiguous.returncode == 2 and "ambiguous" in ambiguous.stderr and f"thr_{digit}" in ambiguous.stderr
    everything = echs(state, "show", "thr_")  # would match every id: named as the empty prefix it is
    assert everything.returncode == 2 and "empty thread id" in everything.stderr
    full_but_unknown = echs(state, "show", "thr_0000000000000000")
    assert full_but_unknown.returncode == 1 and full_but_unknown.stderr.startswith("echs: ")


def test_ls_newest_first_with_state_and_limit(state: Path) -> None:
    first, second, third = new_thread(state), new_thread(state), new_thread(state)
    ok_json(state, "pause", second)
    newest = ok_json(state, "ls", "--limit", "2")
    assert [t["thread_id"] for t in newest] == [third, second]
    paused = ok_json(state, "ls", "--state", "paused")
    assert paused and all(t["state"] == "paused" for t in paused) and paused[0]["thread_id"] == second
    everything = [t["thread_id"] for t in ok_json(state, "ls")]
    assert everything.index(third) < everything.index(second) < everything.index(first)
    human = echs(state, "ls", "--limit", "1").stdout.splitlines()
    assert human[1].startswith(third) and "older thread(s) not shown" in human[-1]
    assert echs(state, "ls", "--state", "asleep").returncode == 2
    assert echs(state, "ls", "--limit", "0").returncode == 2
    ok_json(state, "resume", second)


def test_rm_deletes_a_subtree_and_refuses_a_running_thread(state: Path, gate: Path) -> None:
    parent = new_thread(state)
    child = ok_json(state, "new", "--parent", parent)["thread_id"]
    deleted = ok_json(state, "rm", parent)
    assert sorted(deleted["deleted"]) == sorted([parent, child])
    for tid in (parent, child):
        assert echs(state, "show", tid).returncode == 1
    busy = new_thread(state)
    steps = [{"calls": [{"name": "exec_command", "arguments": {"cmd": gate_command(gate)}}]}, {"text": "done"}]
    assert echs(state, "send", busy, mock_directive(steps)).returncode == 0
    trio.run(_wait_for_tool, state, busy)
    refused = echs(state, "rm", busy)
    assert refused.returncode == 1 and refused.stdout == "" and "running" in refused.stderr
    gate.touch()
    assert echs(state, "kill", busy).returncode == 0
    assert echs(state, "rm", busy).stdout == f"deleted {busy}\n"


async def _wait_for_tool(state: Path, tid: str) -> None:
    async with client_for(state) as client:
        await wait_event(client, tid, of_type("tool.started"))


def test_tree_draws_the_subtree_with_states(state: Path) -> None:
    root = new_thread(state)
    first = ok_json(state, "new", "--parent", root)["thread_id"]
    second = ok_json(state, "new", "--parent", root)["thread_id"]
    grandchild = ok_json(state, "new", "--parent", first)["thread_id"]
    ok_json(state, "pause", second)
    nested = ok_json(state, "tree", root)
    assert nested == [
        {
            "thread_id": root,
            "state": "idle",
            "children": [
                {"thread_id": first, "state": "idle", "children": [{"thread_id": grandchild, "state": "idle", "children": []}]},
                {"thread_id": second, "state": "paused", "children": []},
            ],
        }
    ]
    assert echs(state, "tree", root).stdout.splitlines() == [
        f"{root}  idle",
        f"├─ {first}  idle",
        f"│  └─ {grandchild}  idle",
        f"└─ {second}  paused",
    ]
    roots = [node["thread_id"] for node in ok_json(state, "tree")]
    assert root in roots and first not in roots
