"""``echs send`` against a daemon whose database is locked (a real SQLite write lock held
by another process): every input carries a ``client_msg_id``, an acknowledgement that does
not come in time is asked for again with the same id, so the input is delivered exactly
once; when the lock outlasts every try, echs says the input may have been accepted and how
to find out without sending it twice, and that way works."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest
import trio

from tests.cli.helpers import ECHS, WAIT_S, Serve, clean_env, client_for, echs, echs_async, new_thread, of_type, wait_event

LOCKER = """
import sqlite3, sys
connection = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
connection.execute("BEGIN IMMEDIATE")  # the write lock: the daemon's writer must wait
print("locked", flush=True)
sys.stdin.read()  # held until the test closes our stdin
connection.execute("COMMIT")
"""


class Lock:
    """Another process holding the SQLite database's write lock until ``release``."""

    def __init__(self, database: Path) -> None:
        self.process = subprocess.Popen([sys.executable, "-c", LOCKER, str(database)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None and self.process.stdout.readline() == "locked\n"

    def release(self) -> None:
        assert self.process.stdin is not None
        if not self.process.stdin.closed:
            self.process.stdin.close()
            assert self.process.wait(WAIT_S) == 0


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Path]:
    """A daemon on SQLite (whatever store the suite runs on: the lock is SQLite's)."""
    serve = Serve(tmp_path / "state", suite_store=False)
    yield serve.state_dir
    serve.kill()


def deliveries(state: Path, tid: str, text: str) -> list[dict]:
    """The user messages holding ``text`` in the thread's history."""
    items = json.loads(echs(state, "history", tid, "--json").stdout)
    return [item for item in items if item.get("role") == "user" and text in json.dumps(item)]


async def test_a_send_waiting_on_a_locked_database_is_retried_and_delivered_once(daemon: Path) -> None:
    state = daemon
    tid = new_thread(state)
    lock = Lock(state / "echsd.db")
    try:
        command = [ECHS, "--state-dir", str(state), "--timeout", "1", "send", tid, "while locked", "--json"]
        process = await trio.lowlevel.open_process(command, env=clean_env(state.parent), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert process.stderr is not None and process.stdout is not None
        err = b""
        with trio.fail_after(WAIT_S):
            while b"sending again with the same id" not in err:  # the first try went unanswered
                err += await process.stderr.receive_some(4096)
            lock.release()
            out = b""
            while chunk := await process.stdout.receive_some(65536):
                out += chunk
            assert await process.wait() == 0, err
    finally:
        lock.release()
    ack = json.loads(out)
    assert ack["thread_id"] == tid and ack["disposition"] in ("started", "queued")
    async with client_for(state) as client:
        await wait_event(client, tid, of_type("turn.completed"))
    assert len(deliveries(state, tid, "while locked")) == 1


async def test_a_lock_outlasting_every_try_says_the_input_may_have_been_accepted(daemon: Path) -> None:
    state = daemon
    tid = new_thread(state)
    lock = Lock(state / "echsd.db")
    try:
        result = await echs_async(state, "--timeout", "0.5", "send", tid, "accepted or not")
    finally:
        lock.release()
    assert result.returncode == 1
    (line,) = [line for line in result.stderr.decode().splitlines() if "did not acknowledge" in line]
    assert "may have been accepted" in line and f"echs history {tid}" in line
    key = line.split("`--id ")[1].split("`")[0]
    assert key.startswith("echs-")
    async with client_for(state) as client:
        await wait_event(client, tid, of_type("input.delivered"))  # the lock is gone: the input was accepted after all
    # The way echs gives to find out: the same command with that id.
    again = await echs_async(state, "send", tid, "accepted or not", "--id", key)
    assert again.returncode == 0, again.stderr
    assert b"was used before" in again.stderr  # nothing new was sent
    assert len(deliveries(state, tid, "accepted or not")) == 1
