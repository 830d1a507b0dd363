"""Exec sessions' lives are thread events: started when a call returns with its command still
running, ended whatever ends it (an exit, a pause, a restart), so clients read them."""

from __future__ import annotations

from typing import Any

from echsd.events import ExecSessionEnded, ExecSessionStarted
from echsd.store import queries
from tests.helpers import Watch, mock_directive
from tests.threads.test_core import new_core


def exec_call(cmd: str, **extra: Any) -> dict[str, Any]:
    return {"name": "exec_command", "arguments": {"cmd": cmd, **extra}}


async def turn(daemon: Any, tid: str, watch: Watch, steps: list[dict[str, Any]]) -> int:
    before = watch.last_seq
    await daemon.ops.send(tid, mock_directive(steps))
    await watch.wait_type("turn.completed", after_seq=before)
    return before


async def test_a_session_s_start_and_end_are_logged(daemon: Any, workdir: Any) -> None:
    tid = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    async with Watch(daemon, tid) as watch:
        await turn(daemon, tid, watch, [{"calls": [exec_call("python3 -i", tty=True, yield_time_ms=500)]}, {"text": "started"}])
        [started] = watch.of_type(ExecSessionStarted.type_name)
        session = started.data["session_id"]
        assert watch.of_type("tool.completed")[0].data["session_id"] == session and started.data["command"] == "python3 -i"
        leave = {"name": "write_stdin", "arguments": {"session_id": session, "chars": "exit()\n", "yield_time_ms": 3000}}
        await turn(daemon, tid, watch, [{"calls": [leave]}, {"text": "done"}])
        [ended] = watch.of_type(ExecSessionEnded.type_name)
        assert ended.data == {"session_id": session, "reason": "its process exited", "exit_code": 0}

        await turn(daemon, tid, watch, [{"calls": [exec_call("sleep 60", yield_time_ms=250)]}, {"text": "left running"}])
        second = watch.of_type(ExecSessionStarted.type_name)[-1].data["session_id"]
        await daemon.ops.pause(tid)
        killed = await watch.wait_type(ExecSessionEnded.type_name, session_id=second)
        assert killed.data["reason"] == "the thread was paused" and killed.data["exit_code"] is None
    row = await daemon.store.read(lambda conn: queries.get_thread(conn, tid))
    assert row is not None and "sessions" not in row.extra  # none left open


def test_a_restart_ends_the_sessions_the_worker_left_open() -> None:
    core = new_core()
    core.session_started(4242, "turn_1", "python3 -i")
    assert core.extra["sessions"] == {"4242": "turn_1"}
    fx = core.recover([], [])
    assert ("exec.session_ended", {"session_id": 4242, "reason": "the daemon restarted", "exit_code": None}) in fx.events
    assert "sessions" not in core.extra and fx.statements  # forgotten, and stored so
