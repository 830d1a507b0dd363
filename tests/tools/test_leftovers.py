"""Tool processes do not outlive a daemon killed with SIGKILL: the next start kills them."""

from __future__ import annotations

import signal
from pathlib import Path

import trio

from echsd.wire.client import connect
from tests.helpers import mock_directive
from tests.threads.test_control import processes_with, unique_sleep
from tests.wire.helpers import ServeProcess


async def test_restart_kills_process_groups_left_by_a_killed_daemon(tmp_path: Path) -> None:
    state = tmp_path / "state"
    work = tmp_path / "work"
    work.mkdir()
    marker = unique_sleep()
    first = ServeProcess(state)
    try:
        async with connect(state_dir=state) as client:
            tid = (await client.create_thread(cwd=str(work)))["thread_id"]
            call = {"name": "exec_command", "arguments": {"cmd": f"echo ready; {marker}"}}
            async with client.events(tid) as events:
                await client.send(tid, mock_directive([{"calls": [call]}]))
                with trio.fail_after(15):
                    async for event in events:
                        if event["event"] == "tool.output":
                            break
    finally:
        first.process.send_signal(signal.SIGKILL)
        first.process.wait(15)
    assert processes_with(marker), "the command should survive its daemon's SIGKILL"
    assert list((state / "run" / "groups").iterdir())

    second = ServeProcess(state)  # ready only after leftovers are gone
    try:
        assert processes_with(marker) == []
        assert not list((state / "run" / "groups").iterdir())
        async with connect(state_dir=state) as client:
            history = await client.history(tid)
        assert history[-1]["type"] == "function_call_output"
        assert "restarted" in history[-1]["output"]
    finally:
        assert second.stop() == 0
