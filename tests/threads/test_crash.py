"""A crashing tool or thread worker never takes the daemon (or another thread) down."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from echsd.threads.core import ThreadCore
from echsd.tools.base import ToolContext, ToolResult, ToolSpec
from tests.helpers import Watch, check_thread_invariants, mock_directive


class ExplodingTool:
    spec = ToolSpec("explode", "Raises an unexpected exception.", {"type": "object", "properties": {}})

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        raise RuntimeError("boom from the tool")


async def test_crashing_tool_becomes_output(daemon: Any, workdir: Any) -> None:
    daemon.service.supervisor.services.builtins["explode"] = ExplodingTool()  # type: ignore[index]
    tid = (await daemon.service.create(cwd=str(workdir), tools="+explode"))["thread_id"]
    async with Watch(daemon, tid) as watch:
        await daemon.service.send(tid, mock_directive([{"calls": [{"name": "explode", "arguments": {}}]}, {"text": "fine"}]))
        done = await watch.wait_type("turn.completed")
    assert done.data["final_text"] == "fine"
    output = watch.of_type("tool.completed")[0].data["output"]
    assert "crashed" in output and "boom from the tool" in output
    await check_thread_invariants(daemon, tid)


async def test_worker_crash_is_contained_and_restarted(daemon: Any, workdir: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    real_finish = ThreadCore.finish_turn
    crashes = {"left": 1}

    def finish_or_crash(core: ThreadCore, status: str, error: Any = None, partial: str = "") -> Any:
        if crashes["left"]:
            crashes["left"] -= 1
            raise RuntimeError("injected worker crash")
        return real_finish(core, status, error, partial)

    monkeypatch.setattr(ThreadCore, "finish_turn", finish_or_crash)
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


async def test_worker_that_keeps_crashing_is_given_up(
    tmp_path: Any, mock_upstream: Any, nursery: Any, workdir: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from echsd.daemon import Daemon
    from echsd.errors import Internal
    from tests.helpers import make_settings

    state = tmp_path / "state"
    state.mkdir()
    (state / "config.toml").write_text("[tuning]\nrestart_limit = 2\n")
    daemon = Daemon(make_settings(state, mock_upstream.base_url))
    await nursery.start(daemon.run)
    real_finish = ThreadCore.finish_turn
    doomed: set[str] = set()

    def crash_for_doomed(core: ThreadCore, status: str, error: Any = None, partial: str = "") -> Any:
        if core.thread_id in doomed:
            raise RuntimeError("always crashing")
        return real_finish(core, status, error, partial)

    monkeypatch.setattr(ThreadCore, "finish_turn", crash_for_doomed)
    victim = (await daemon.service.create(cwd=str(workdir)))["thread_id"]
    doomed.add(victim)
    async with Watch(daemon, victim) as watch:
        for attempt in range(3):
            await daemon.service.send(victim, mock_directive({"text": f"attempt {attempt}"}))
            if attempt < 2:
                await watch.wait_count("turn.error", attempt + 1)
    record = daemon.service.supervisor.records[victim]
    with pytest.raises(Internal, match="unavailable"):
        for _ in range(50):  # the third crash gives the worker up; requests then fail fast
            await daemon.service.send(victim, "anyone there?")
            await trio.sleep(0)
    assert record.failed and "always crashing" in record.failed
    assert daemon.service.get(victim)["failed"]
    other = (await daemon.service.create(cwd=str(workdir)))["thread_id"]
    async with Watch(daemon, other) as watch:
        await daemon.service.send(other, "fine")
        await watch.wait_type("turn.completed")
    daemon.request_stop()
    await daemon.wait_stopped()
