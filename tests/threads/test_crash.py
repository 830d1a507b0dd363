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
    daemon.supervisor.services.builtins["explode"] = ExplodingTool()  # type: ignore[index]
    tid = (await daemon.ops.create_thread(cwd=str(workdir), tools="+explode"))["thread_id"]
    async with Watch(daemon, tid) as watch:
        await daemon.ops.send(tid, mock_directive([{"calls": [{"name": "explode", "arguments": {}}]}, {"text": "fine"}]))
        done = await watch.wait_type("turn.completed")
    assert done.data["final_text"] == "fine"
    output = watch.of_type("tool.completed")[0].data["output"]
    assert "crashed" in output and "boom from the tool" in output
    await check_thread_invariants(daemon, tid)


async def test_worker_crash_is_contained_and_restarted(daemon: Any, workdir: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    real_finish = ThreadCore.finish_turn
    crashes = {"left": 1}

    def finish_or_crash(core: ThreadCore, status: str, error: Any = None, partial: str = "", **more: Any) -> Any:
        if crashes["left"]:
            crashes["left"] -= 1
            raise RuntimeError("injected worker crash")
        return real_finish(core, status, error, partial, **more)

    monkeypatch.setattr(ThreadCore, "finish_turn", finish_or_crash)
    victim = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    bystander = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    call = {"name": "exec_command", "arguments": {"cmd": "echo hi"}}
    async with Watch(daemon, victim) as watch:
        await daemon.ops.send(victim, mock_directive([{"calls": [call]}, {"text": "x"}]))
        error = await watch.wait_type("turn.error")
        assert error.data["error"]["code"] == "internal"
        assert "injected worker crash" in error.data["error"]["message"]
        # The restarted worker serves the thread again.
        await daemon.ops.send(victim, mock_directive({"text": "still alive"}))
        done = await watch.wait_type("turn.completed")
    assert done.data["final_text"] == "still alive"
    async with Watch(daemon, bystander) as other:
        await daemon.ops.send(bystander, "unaffected")
        await other.wait_type("turn.completed")
    await check_thread_invariants(daemon, victim)


async def _give_up_a_thread(daemon: Any, workdir: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[str, set[str]]:
    """A thread whose worker crashes on every turn end, sent to until it is given up."""
    from echsd.errors import Unavailable

    real_finish = ThreadCore.finish_turn
    doomed: set[str] = set()

    def crash_for_doomed(core: ThreadCore, status: str, error: Any = None, partial: str = "", **more: Any) -> Any:
        if core.thread_id in doomed:
            raise RuntimeError("always crashing")
        return real_finish(core, status, error, partial, **more)

    monkeypatch.setattr(ThreadCore, "finish_turn", crash_for_doomed)
    victim = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    doomed.add(victim)
    async with Watch(daemon, victim) as watch:
        for attempt in range(3):
            await daemon.ops.send(victim, mock_directive({"text": f"attempt {attempt}"}))
            if attempt < 2:
                await watch.wait_count("turn.error", attempt + 1)
    with pytest.raises(Unavailable, match="always crashing"), trio.fail_after(15):
        while True:  # the third crash gives the worker up; requests then fail fast
            await daemon.ops.send(victim, "anyone there?")
            await trio.sleep(0)
    return victim, doomed


async def _start(nursery: Any, tmp_path: Any, base_url: str, tuning: str) -> Any:
    from echsd.daemon import Daemon
    from tests.helpers import make_settings

    state = tmp_path / "state"
    state.mkdir(exist_ok=True)
    (state / "config.toml").write_text("[tuning]\n" + tuning)
    daemon = Daemon(make_settings(state, base_url))
    await nursery.start(daemon.run)
    return daemon


async def test_worker_that_keeps_crashing_is_given_up_and_can_still_be_killed(
    tmp_path: Any, mock_upstream: Any, nursery: Any, workdir: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from echsd.errors import Unavailable

    daemon = await _start(nursery, tmp_path, mock_upstream.base_url, "restart_limit = 2\nrestart_cooldown_s = 3600\n")
    victim, _ = await _give_up_a_thread(daemon, workdir, monkeypatch)
    assert "always crashing" in (await daemon.ops.get_thread(victim))["failed"]
    async with Watch(daemon, victim) as watch:
        await watch.wait_type("thread.given_up")
    why = await daemon.ops.why(victim)  # answered without the worker
    assert why["waiting_on"]["kind"] == "given_up" and "always crashing" in why["waiting_on"]["reason"]
    announced = [e for e in why["last_events"] if e["event"] == "thread.given_up"]
    assert len(announced) == 1 and "always crashing" in announced[0]["data"]["reason"] and announced[0]["data"]["retry_in_s"] == 3600
    with pytest.raises(Unavailable, match="tried again on a request after"):
        await daemon.ops.configure(victim, {"reasoning": "low"})
    other = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    async with Watch(daemon, other) as watch:
        await daemon.ops.send(other, "fine")
        await watch.wait_type("turn.completed")
    killed = await daemon.ops.kill(victim)  # no waiting for the cool-down
    assert killed["killed"] == [victim] and killed["state"] == "killed"
    assert (await daemon.ops.get_thread(victim))["state"] == "killed"
    daemon.request_stop()
    await daemon.wait_stopped()
    monkeypatch.undo()
    daemon = await _start(nursery, tmp_path, mock_upstream.base_url, "")  # the kill was stored
    assert (await daemon.ops.get_thread(victim))["state"] == "killed" and "failed" not in await daemon.ops.get_thread(victim)
    daemon.request_stop()
    await daemon.wait_stopped()


async def test_given_up_worker_restarts_on_a_request_after_its_cool_down(
    tmp_path: Any, mock_upstream: Any, nursery: Any, workdir: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    daemon = await _start(nursery, tmp_path, mock_upstream.base_url, "restart_limit = 2\nrestart_cooldown_s = 0\n")
    victim, doomed = await _give_up_a_thread(daemon, workdir, monkeypatch)
    doomed.clear()  # whatever broke it is fixed
    async with Watch(daemon, victim) as watch:
        await daemon.ops.send(victim, mock_directive({"text": "back again"}))
        await watch.wait_type("turn.completed", final_text="back again")  # after what was queued
    assert {e.data["final_text"] for e in watch.of_type("turn.completed")} <= {"mock reply to: anyone there?", "back again"}
    assert "failed" not in await daemon.ops.get_thread(victim)
    await check_thread_invariants(daemon, victim)
    daemon.request_stop()
    await daemon.wait_stopped()
