"""A crashing tool or thread worker never takes the daemon (or another thread) down."""

from __future__ import annotations

from typing import Any

import pytest

from echsd.threads import control
from echsd.tools.base import ToolContext, ToolResult, ToolSpec
from tests.helpers import Watch, check_thread_invariants, mock_directive


class ExplodingTool:
    spec = ToolSpec("explode", "Raises an unexpected exception.", {"type": "object", "properties": {}})

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        raise RuntimeError("boom from the tool")


async def test_crashing_tool_becomes_output(daemon: Any, workdir: Any) -> None:
    daemon.service.supervisor.services.tools["explode"] = ExplodingTool()
    tid = (await daemon.service.create(cwd=str(workdir), tools="+explode"))["thread_id"]
    async with Watch(daemon, tid) as watch:
        await daemon.service.send(tid, mock_directive([{"calls": [{"name": "explode", "arguments": {}}]}, {"text": "fine"}]))
        done = await watch.wait_type("turn.completed")
    assert done.data["final_text"] == "fine"
    output = watch.of_type("tool.completed")[0].data["output"]
    assert "crashed" in output and "boom from the tool" in output
    await check_thread_invariants(daemon, tid)


async def test_worker_crash_is_contained_and_restarted(daemon: Any, workdir: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    real_finish = control.finish_turn
    crashes = {"left": 1}

    async def finish_or_crash(actor: Any, turn: Any, outcome: Any) -> None:
        if crashes["left"]:
            crashes["left"] -= 1
            raise RuntimeError("injected worker crash")
        await real_finish(actor, turn, outcome)

    monkeypatch.setattr(control, "finish_turn", finish_or_crash)
    victim = (await daemon.service.create(cwd=str(workdir)))["thread_id"]
    bystander = (await daemon.service.create(cwd=str(workdir)))["thread_id"]
    call = {"name": "exec_command", "arguments": {"cmd": "echo hi"}}
    async with Watch(daemon, victim) as watch:
        await daemon.service.send(victim, mock_directive([{"calls": [call]}, {"text": "x"}]))
        error = await watch.wait_type("turn.error")
        assert error.data["error"]["code"] == "internal"
        assert "injected worker crash" in error.data["error"]["message"]
        # The restarted worker serves the thread again.
        await daemon.service.send(victim, mock_directive({"text": "still alive"}))
        done = await watch.wait_type("turn.completed")
    assert done.data["final_text"] == "still alive"
    async with Watch(daemon, bystander) as other:
        await daemon.service.send(bystander, "unaffected")
        await other.wait_type("turn.completed")
    await check_thread_invariants(daemon, victim)
