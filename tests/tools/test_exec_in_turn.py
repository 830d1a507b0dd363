"""exec_command through the real tool loop: the mock upstream sends Codex-shaped arguments
exactly as Codex models do, and the model gets Codex's report back."""

from __future__ import annotations

from typing import Any

import trio

from tests.helpers import Watch, mock_directive
from tests.tools.exec_helpers import escaped, escaping_command, processes_with, wait_until


async def test_codex_shaped_call_and_report(daemon: Any, workdir: Any, mock_upstream: Any) -> None:
    arguments = {
        "cmd": "echo from-the-tool; exit 4",
        "workdir": str(workdir),
        "yield_time_ms": 1000,
        "max_output_tokens": 2000,
        "sandbox_permissions": "require_escalated",
        "justification": "Do you want to run the tests?",
    }
    tid = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    async with Watch(daemon, tid) as watch:
        await daemon.ops.send(tid, mock_directive([{"calls": [{"name": "exec_command", "arguments": arguments}]}, {"text": "ok"}]))
        asked = await watch.wait_type("approval.requested")  # require_escalated: a person says yes first
        assert asked.data["summary"] == "outside the sandbox: echo from-the-tool; exit 4"
        await daemon.ops.respond_approval(asked.data["request_id"], "approve")
        await watch.wait_type("turn.completed")
    completed = watch.of_type("tool.completed")[0].data
    assert completed["ok"] is False and completed["exit_code"] == 4 and completed["session_id"] is None
    assert "Process exited with code 4" in completed["output"] and "from-the-tool" in completed["output"]
    assert "Note:" not in completed["output"]
    sent_back = mock_upstream.requests[-1].body["input"][-1]
    assert sent_back["type"] == "function_call_output" and sent_back["output"] == completed["output"]


async def test_running_session_dies_with_the_daemon(daemon: Any, workdir: Any) -> None:
    command, markers = escaping_command(["setsid", "double-fork"], then="sleep 60")
    call = {"name": "exec_command", "arguments": {"cmd": command, "yield_time_ms": 250}}
    tid = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    async with Watch(daemon, tid) as watch:
        await daemon.ops.send(tid, mock_directive([{"calls": [call]}, {"text": "left it running"}]))
        await watch.wait_type("turn.completed")
    assert "Process running with session ID" in watch.of_type("tool.completed")[0].data["output"]
    await wait_until(lambda: escaped(markers))
    daemon.request_stop()
    await daemon.wait_stopped()
    await wait_until(lambda: not any(processes_with(m) for m in markers))


def exec_call(cmd: str, **extra: Any) -> dict[str, Any]:
    return {"name": "exec_command", "arguments": {"cmd": cmd, **extra}}


async def one_turn(daemon: Any, tid: str, steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Run one scripted turn; the ``tool.completed`` data of that turn."""
    async with Watch(daemon, tid) as watch:
        before = watch.last_seq
        await daemon.ops.send(tid, mock_directive(steps))
        await watch.wait_type("turn.completed", after_seq=before)
    return [e.data for e in watch.of_type("tool.completed") if e.seq > before]


async def test_an_interactive_session_across_turns(daemon: Any, workdir: Any, mock_upstream: Any) -> None:
    tid = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    started = await one_turn(daemon, tid, [{"calls": [exec_call("python3 -i", tty=True, yield_time_ms=500)]}, {"text": "started"}])
    session = started[0]["session_id"]
    assert isinstance(session, int)
    poke = {"name": "write_stdin", "arguments": {"session_id": session, "chars": "print(6*7)\n", "yield_time_ms": 1000}}
    answered = await one_turn(daemon, tid, [{"calls": [poke]}, {"text": "asked"}])
    assert "42" in answered[0]["output"]
    leave = {"name": "write_stdin", "arguments": {"session_id": session, "chars": "exit()\n", "yield_time_ms": 2000}}
    left = await one_turn(daemon, tid, [{"calls": [leave]}, {"text": "done"}])
    completed = left[0]
    assert completed["exit_code"] == 0 and "Process exited with code 0" in completed["output"]
    assert mock_upstream.requests[-1].body["input"][-1]["output"] == completed["output"]


async def test_interrupt_kills_what_the_turn_started(daemon: Any, workdir: Any) -> None:
    command, markers = escaping_command(["sh-background", "setsid"], then="sleep 60")
    tid = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    async with Watch(daemon, tid) as watch:
        await daemon.ops.send(tid, mock_directive([{"calls": [exec_call(command, yield_time_ms=30000)]}, {"text": "x"}]))
        await watch.wait_type("tool.started")
        await wait_until(lambda: escaped(markers))
        assert (await daemon.ops.interrupt(tid))["interrupted"] is True
    await wait_until(lambda: not any(processes_with(m) for m in markers))


async def test_sessions_left_running_die_when_the_thread_is_paused_or_killed(daemon: Any, workdir: Any) -> None:
    for control in ("pause", "kill"):
        command, markers = escaping_command(["sh-background", "double-fork"], then="sleep 60")
        tid = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
        completed = await one_turn(daemon, tid, [{"calls": [exec_call(command, yield_time_ms=250)]}, {"text": "left running"}])
        assert completed[0]["session_id"] is not None
        await wait_until(lambda: escaped(markers))
        await getattr(daemon.ops, control)(tid)
        await wait_until(lambda: not any(processes_with(m) for m in markers))


async def test_the_session_cap_holds_under_300_parallel_calls(daemon: Any, workdir: Any) -> None:
    """300 calls of one response, each leaving a command running: a thread never has more
    than 16 sessions (more commands than that never run at once), the rest get a clear error."""
    from echsd.tools.sessions import MAX_SESSIONS_PER_THREAD
    from tests.tools.exec_helpers import marker

    m = marker()
    calls = [exec_call(f"sleep {m}", yield_time_ms=250) for _ in range(300)]
    tid = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    peak = 0
    async with Watch(daemon, tid) as watch:
        await daemon.ops.send(tid, mock_directive([{"calls": calls}, {"text": "many"}]))
        while not watch.of_type("turn.completed"):
            peak = max(peak, len(processes_with(f"sleep {m}")))
            with trio.move_on_after(0.005):
                await watch.wait_type("turn.completed")
    outputs = [e.data["output"] for e in watch.of_type("tool.completed")]
    running = len(processes_with(f"sleep {m}"))
    assert running <= MAX_SESSIONS_PER_THREAD and peak <= MAX_SESSIONS_PER_THREAD, (running, peak)
    assert len(outputs) == 300
    assert sum("Process running with session ID" in output for output in outputs) >= MAX_SESSIONS_PER_THREAD
    assert all("Process running" in output or "sessions of this thread are busy" in output for output in outputs)
