"""Ids on the command line: an empty thread id (or prefix) is a usage error in every verb,
even where it would match the only thread; bytes that are not UTF-8 in ids, keys and
``--id`` are usage errors, never a traceback; approval ids take a unique prefix as thread
ids do, with clear errors for an unknown or ambiguous one."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Iterator

import pytest

from tests.cli.helpers import ECHS, WAIT_S, Serve, clean_env, client_for, echs, echs_async, new_thread, of_type, wait_event
from tests.helpers import mock_directive

# Every verb that takes a thread id, with what else it needs; "" stands for the id.
THREAD_VERBS = [
    ("show", ""),
    ("rm", ""),
    ("kill", ""),
    ("interrupt", ""),
    ("pause", ""),
    ("resume", ""),
    ("compact", ""),
    ("history", ""),
    ("events", ""),
    ("events", "", "--follow"),
    ("attach", ""),
    ("tree", ""),
    ("approvals", ""),
    ("config", "", "model=other"),
    ("send", "", "hello"),
    ("send", "", "hello", "--wait"),
    ("new", "--parent", ""),
]


@pytest.fixture(scope="module")
def lonely(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A daemon holding exactly one thread (where an empty prefix would match it)."""
    serve = Serve(tmp_path_factory.mktemp("lonely") / "state")
    yield serve.state_dir
    serve.kill()


@pytest.mark.parametrize("empty", ["", " ", "thr_"])
def test_an_empty_thread_id_is_a_usage_error_in_every_verb(lonely: Path, empty: str) -> None:
    if not json.loads(echs(lonely, "ls", "--json").stdout):
        new_thread(lonely)
    (only,) = json.loads(echs(lonely, "ls", "--json").stdout)
    for verb in THREAD_VERBS:
        args = [empty if arg == "" else arg for arg in verb]
        result = echs(lonely, *args)
        assert result.returncode == 2, (args, result.stdout, result.stderr)
        assert "empty thread id" in result.stderr and "Traceback" not in result.stderr, (args, result.stderr)
    (after,) = json.loads(echs(lonely, "ls", "--json").stdout)
    assert after["thread_id"] == only["thread_id"] and after["state"] == only["state"] == "idle"
    assert after["last_seq"] == only["last_seq"] and after["children"] == []


def _echs_bytes(state: Path, *args: str | bytes) -> subprocess.CompletedProcess[bytes]:
    command = [os.fsencode(ECHS), b"--state-dir", os.fsencode(state), *(os.fsencode(a) if isinstance(a, str) else a for a in args)]
    return subprocess.run(command, env=clean_env(state.parent), capture_output=True, timeout=WAIT_S)


def test_bytes_that_are_not_utf8_are_usage_errors(state: Path) -> None:
    tid = new_thread(state)
    bad = b"k\xff\xfe"
    for args in (
        ("bb", "get", bad),
        ("bb", "set", bad, "1"),
        ("bb", "set", "key", b'"\xff"'),
        ("bb", "rm", bad),
        ("bb", "ls", bad),
        ("approve", bad),
        ("deny", bad),
        ("send", tid, "hello", "--id", bad),
        ("show", bad),
        ("send", bad, "hello"),
    ):
        result = _echs_bytes(state, *args)
        assert result.returncode == 2, (args, result.stderr)
        assert b"not valid UTF-8" in result.stderr and b"Traceback" not in result.stderr, (args, result.stderr)
    assert json.loads(echs(state, "show", tid, "--json").stdout)["last_seq"] == 1  # nothing was sent


async def test_approval_ids_take_a_unique_prefix(state: Path, tmp_path: Path) -> None:
    tid = new_thread(state, "--cwd", str(tmp_path), "--approval", "always")
    calls = [{"calls": [{"name": "exec_command", "arguments": {"cmd": "touch first"}}]}, {"text": "ok"}]
    async with client_for(state) as client:
        await client.send(tid, mock_directive(calls))
        asked = await wait_event(client, tid, of_type("approval.requested"))
        request_id = asked["data"]["request_id"]

        unknown = await echs_async(state, "approve", "apr_zz")
        assert unknown.returncode == 1 and "no pending approval id starts with 'apr_zz'" in unknown.stderr.decode()
        assert "echs approvals" in unknown.stderr.decode()
        ambiguous = await echs_async(state, "deny", request_id[:4])  # "apr_" alone: every one
        assert ambiguous.returncode == 2 and "empty pending approval id" in ambiguous.stderr.decode()

        approved = await echs_async(state, "approve", request_id[4:9], "--json")  # no apr_, 5 hex digits
        assert approved.returncode == 0, approved.stderr
        assert json.loads(approved.stdout) == {"request_id": request_id, "decision": "approve", "thread_id": tid}
        await wait_event(client, tid, of_type("turn.completed"))
    assert (tmp_path / "first").exists()
    answered = await echs_async(state, "approve", request_id[:9])
    assert answered.returncode == 1 and "no pending approval id starts with" in answered.stderr.decode()


def test_an_ambiguous_approval_prefix_names_the_candidates() -> None:
    """(Two pending requests sharing a prefix cannot be made on purpose: the choice is
    checked on its own, as for thread ids.)"""
    from echsd.cli.echs_ids import APPROVAL, choose
    from echsd.cli.echs_runtime import Refusal

    ids = ["apr_0a1b2c3d4e5f6071", "apr_0a1b999999999999", "apr_ffffffffffffffff"]
    with pytest.raises(Refusal) as ambiguous:
        choose("0a1b", ids, APPROVAL)
    assert ambiguous.value.code == 2 and "2 pending approval ids start with it" in ambiguous.value.message
    assert choose("apr_0a1b2", ids, APPROVAL) == ids[0]
