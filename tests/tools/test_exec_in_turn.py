"""exec_command through the real tool loop: the mock upstream sends Codex-shaped arguments
exactly as Codex models do, and the model gets Codex's report back."""

from __future__ import annotations

from typing import Any

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
    tid = (await daemon.service.create(cwd=str(workdir)))["thread_id"]
    async with Watch(daemon, tid) as watch:
        await daemon.service.send(tid, mock_directive([{"calls": [{"name": "exec_command", "arguments": arguments}]}, {"text": "ok"}]))
        await watch.wait_type("turn.completed")
    completed = watch.of_type("tool.completed")[0].data
    assert completed["ok"] is False and completed["exit_code"] == 4 and completed["session_id"] is None
    assert "Process exited with code 4" in completed["output"] and "from-the-tool" in completed["output"]
    assert "Note: sandbox_permissions, justification ignored" in completed["output"]
    sent_back = mock_upstream.requests[-1].body["input"][-1]
    assert sent_back["type"] == "function_call_output" and sent_back["output"] == completed["output"]


async def test_running_session_dies_with_the_daemon(daemon: Any, workdir: Any) -> None:
    command, markers = escaping_command(["setsid", "double-fork"], then="sleep 60")
    call = {"name": "exec_command", "arguments": {"cmd": command, "yield_time_ms": 250}}
    tid = (await daemon.service.create(cwd=str(workdir)))["thread_id"]
    async with Watch(daemon, tid) as watch:
        await daemon.service.send(tid, mock_directive([{"calls": [call]}, {"text": "left it running"}]))
        await watch.wait_type("turn.completed")
    assert "Process running with session ID" in watch.of_type("tool.completed")[0].data["output"]
    await wait_until(lambda: escaped(markers))
    daemon.request_stop()
    await daemon.wait_stopped()
    await wait_until(lambda: not any(processes_with(m) for m in markers))
