"""``echs events --follow`` across a daemon restart: the daemon is stopped with SIGTERM in
the middle of a turn (graceful: the turn ends as interrupted, within 10 s) and started
again on the same state dir; the follower reconnects and goes on from its last seq, so
what it printed is exactly the thread's log: no gap, no repeat."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import trio

from tests.cli.helpers import ECHS, WAIT_S, LineReader, Serve, clean_env, echs, gate_command, json_lines, new_thread
from tests.helpers import mock_directive


class Follower(LineReader):
    """``echs events ID --follow --json`` with its output parsed as it arrives."""

    @property
    def events(self) -> list[dict]:
        return self.lines

    async def wait_for(self, kind: str, count: int = 1, **data: object) -> dict:
        def found(lines: list[dict]) -> list[dict]:
            return [e for e in lines if e["event"] == kind and all(e["data"].get(k) == v for k, v in data.items())]

        await self.wait_until(lambda lines: len(found(lines)) >= count)
        return found(self.lines)[count - 1]


async def test_follow_survives_restart_without_gap_or_repeat(tmp_path: Path) -> None:
    serve = Serve(tmp_path / "state")
    state = serve.state_dir
    try:
        tid = new_thread(state)
        assert echs(state, "send", tid, "before the restart", "--wait").returncode == 0
        command = [ECHS, "--state-dir", str(state), "events", tid, "--follow", "--json"]
        process = await trio.lowlevel.open_process(command, env=clean_env(state.parent), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        follower = Follower(process)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(follower.read)
            await follower.wait_for("turn.completed")

            gated = mock_directive([{"calls": [{"name": "exec_command", "arguments": {"cmd": gate_command(tmp_path / "never")}}]}])
            assert echs(state, "send", tid, gated).returncode == 0
            await follower.wait_for("tool.started")

            stopping = time.monotonic()
            assert await trio.to_thread.run_sync(serve.terminate) == 0
            assert time.monotonic() - stopping < 10.0  # CONTRACT.md 1.1: graceful within 10 s
            await trio.to_thread.run_sync(serve.start)

            after = echs(state, "send", tid, mock_directive({"text": "after the restart"}), "--wait")
            assert after.returncode == 0 and after.stdout == "after the restart\n"
            await follower.wait_for("turn.completed", count=2)
            replay = json_lines(echs(state, "events", tid, "--json").stdout)
            await follower.wait_for(replay[-1]["event"], count=sum(e["event"] == replay[-1]["event"] for e in replay))

            process.send_signal(signal.SIGINT)
            with trio.fail_after(WAIT_S):
                assert await process.wait() == 0

        assert [e["seq"] for e in follower.events] == list(range(1, len(follower.events) + 1))
        assert follower.events[: len(replay)] == replay
        interrupted = [e for e in replay if e["event"] == "turn.interrupted"]
        assert [e["data"]["reason"] for e in interrupted] == ["shutdown"]
    finally:
        serve.kill()
