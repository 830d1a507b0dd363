"""apply_patch through the real tool loop, the ``writes`` policy, and approvals (over the
in-process service and the wire), with the mock upstream issuing Codex-shaped calls."""

from __future__ import annotations

from pathlib import Path
from typing import Any, AsyncIterator

import pytest
import trio

from tests.helpers import Watch, check_thread_invariants, mock_directive
from tests.wire.helpers import start_daemon, stop_daemon

PATCH = "*** Begin Patch\n*** Update File: notes.txt\n@@\n-old line\n+new line\n*** End Patch\n"
HEREDOC = f"apply_patch <<'EOF'\n{PATCH}EOF\n"


def patch_call(patch: str = PATCH) -> dict[str, Any]:
    return {"name": "apply_patch", "arguments": {"input": patch}}


def shell_call(cmd: str) -> dict[str, Any]:
    return {"name": "exec_command", "arguments": {"cmd": cmd}}


async def run_turn(daemon: Any, thread_id: str, *calls: dict[str, Any]) -> tuple[Watch, list[Any]]:
    async with Watch(daemon, thread_id) as watch:
        await daemon.ops.send(thread_id, mock_directive([{"calls": list(calls)}, {"text": "done"}]))
        await watch.wait_type("turn.completed")
    return watch, [e.data for e in watch.of_type("tool.completed")]


@pytest.fixture
async def slow_approvals(tmp_path: Path, mock_upstream: Any, nursery: trio.Nursery) -> AsyncIterator[Any]:
    daemon = await start_daemon(nursery, tmp_path / "state", mock_upstream.base_url, tcp=False, tuning={"approval_timeout_s": 0.3})
    yield daemon
    await stop_daemon(daemon)


async def test_apply_patch_as_a_function_call(daemon: Any, workdir: Path, mock_upstream: Any) -> None:
    (workdir / "notes.txt").write_text("old line\n")
    tid = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    _watch, [completed] = await run_turn(daemon, tid, patch_call())
    assert completed["ok"] and completed["output"] == "Success. Updated the following files:\nM notes.txt\n"
    assert (workdir / "notes.txt").read_text() == "new line\n"
    sent = mock_upstream.requests[-1].body["input"]
    assert sent[-1]["type"] == "function_call_output" and sent[-1]["output"].startswith("Success.")
    assert any(tool["name"] == "apply_patch" for tool in mock_upstream.requests[0].body["tools"])
    await check_thread_invariants(daemon, tid)


async def test_apply_patch_sent_through_the_shell_is_applied_as_a_patch(daemon: Any, workdir: Path) -> None:
    (workdir / "notes.txt").write_text("old line\n")
    tid = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    _watch, [completed] = await run_turn(daemon, tid, shell_call(HEREDOC))
    assert completed["name"] == "exec_command"
    assert completed["output"] == "Success. Updated the following files:\nM notes.txt\n"
    assert (workdir / "notes.txt").read_text() == "new line\n"


async def test_a_failing_patch_changes_nothing_and_says_why(daemon: Any, workdir: Path) -> None:
    (workdir / "notes.txt").write_text("something else\n")
    tid = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    _watch, completed = await run_turn(daemon, tid, patch_call(), patch_call("not a patch"))
    assert [c["ok"] for c in completed] == [False, False]
    assert all("No file was changed" in c["output"] for c in completed)
    assert "Failed to find expected lines" in completed[0]["output"] and "*** Begin Patch" in completed[1]["output"]
    assert (workdir / "notes.txt").read_text() == "something else\n"


@pytest.mark.parametrize(("writes", "expect_output", "content"), [("dry-run", "+new line", "old line\n"), ("deny", "writes=deny", "old line\n")])
async def test_writes_policy(daemon: Any, workdir: Path, writes: str, expect_output: str, content: str) -> None:
    (workdir / "notes.txt").write_text("old line\n")
    tid = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    configured = await daemon.ops.configure(tid, {"writes": writes})
    assert configured["config"]["writes"] == writes
    _watch, completed = await run_turn(daemon, tid, patch_call(), shell_call(HEREDOC))
    assert all(expect_output in c["output"] for c in completed), completed
    assert (workdir / "notes.txt").read_text() == content


async def _approval_requested(watch: Watch) -> dict[str, Any]:
    return (await watch.wait_type("approval.requested")).data


async def test_approval_always_runs_only_what_was_approved(daemon: Any, workdir: Path) -> None:
    tid = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    await daemon.ops.configure(tid, {"approval": "always"})
    async with Watch(daemon, tid) as watch:
        await daemon.ops.send(tid, mock_directive([{"calls": [shell_call("touch approved")]}, {"calls": [shell_call("touch denied")]}, {"text": "ok"}]))
        first = await _approval_requested(watch)
        assert first["summary"] == "touch approved" and first["tool"] == "exec_command"
        assert [p["request_id"] for p in await daemon.ops.approvals(thread_id=tid)] == [first["request_id"]]
        assert (await daemon.ops.respond_approval(first["request_id"], "approve"))["decision"] == "approve"
        second = await watch.wait_for(lambda e: e.type == "approval.requested" and e.data["request_id"] != first["request_id"])
        await daemon.ops.respond_approval(second.data["request_id"], "deny")
        await watch.wait_type("turn.completed")
    assert (workdir / "approved").exists() and not (workdir / "denied").exists()
    resolved = [e.data["decision"] for e in watch.of_type("approval.resolved")]
    assert resolved == ["approve", "deny"]
    outputs = [e.data["output"] for e in watch.of_type("tool.completed")]
    assert "denied" in outputs[1] and "did not run" in outputs[1]
    assert await daemon.ops.approvals() == []


async def test_on_write_asks_for_writes_only(daemon: Any, workdir: Path) -> None:
    (workdir / "notes.txt").write_text("old line\n")
    tid = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    await daemon.ops.configure(tid, {"approval": "on-write"})
    async with Watch(daemon, tid) as watch:
        await daemon.ops.send(tid, mock_directive([{"calls": [patch_call()]}, {"text": "ok"}]))
        request = await _approval_requested(watch)
        assert request["tool"] == "apply_patch" and request["summary"] == "update notes.txt"
        await daemon.ops.respond_approval(request["request_id"], "approve")
        await watch.wait_type("turn.completed")
    assert (workdir / "notes.txt").read_text() == "new line\n"


async def test_an_unanswered_approval_times_out_as_denied(slow_approvals: Any, workdir: Path) -> None:
    daemon = slow_approvals
    tid = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    await daemon.ops.configure(tid, {"approval": "always"})
    watch, [completed] = await run_turn(daemon, tid, shell_call("touch never"))
    assert "nobody answered" in completed["output"] and not (workdir / "never").exists()
    assert [e.data["decision"] for e in watch.of_type("approval.resolved")] == ["timeout"]


async def test_interrupt_cancels_a_pending_approval(daemon: Any, workdir: Path) -> None:
    tid = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    await daemon.ops.configure(tid, {"approval": "always"})
    async with Watch(daemon, tid) as watch:
        await daemon.ops.send(tid, mock_directive([{"calls": [shell_call("touch never")]}, {"text": "ok"}]))
        request = await _approval_requested(watch)
        result = await daemon.ops.interrupt(tid)
        assert result["interrupted"] is True
        resolved = await watch.wait_type("approval.resolved")
    assert resolved.data == {"request_id": request["request_id"], "call_id": request["call_id"], "decision": "cancelled"}
    assert await daemon.ops.approvals() == [] and not (workdir / "never").exists()
    await check_thread_invariants(daemon, tid)


async def test_update_plan_keeps_the_plan_on_the_thread(daemon: Any, workdir: Path) -> None:
    plan = [{"step": "read the code", "status": "completed"}, {"step": "fix the bug", "status": "in_progress"}, {"step": "run tests", "status": "pending"}]
    bad = [{"step": "a", "status": "in_progress"}, {"step": "b", "status": "in_progress"}]
    tid = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    calls = [{"name": "update_plan", "arguments": {"explanation": "three steps", "plan": plan}}, {"name": "update_plan", "arguments": {"plan": bad}}]
    watch, completed = await run_turn(daemon, tid, *calls)
    assert [c["output"] for c in completed][0] == "Plan updated"
    assert "at most one step can be in_progress" in completed[1]["output"]
    updated = watch.of_type("plan.updated")
    assert len(updated) == 1 and updated[0].data["steps"] == plan and updated[0].data["explanation"] == "three steps"
    assert (await daemon.ops.get_thread(tid))["plan"] == {"explanation": "three steps", "steps": plan}


async def test_apply_patch_as_a_freeform_call(daemon: Any, workdir: Path, mock_upstream: Any) -> None:
    (workdir / "notes.txt").write_text("old line\n")
    tid = (await daemon.ops.create_thread(cwd=str(workdir), model="gpt-5.5"))["thread_id"]
    _watch, [completed] = await run_turn(daemon, tid, {"name": "apply_patch", "input": PATCH})
    assert completed["ok"] and completed["output"].startswith("Success.")
    assert (workdir / "notes.txt").read_text() == "new line\n"
    offered = {tool["name"]: tool for tool in mock_upstream.requests[0].body["tools"]}
    assert offered["apply_patch"]["type"] == "custom" and offered["apply_patch"]["format"]["syntax"] == "lark"
    sent = mock_upstream.requests[-1].body["input"]
    assert sent[-2]["type"] == "custom_tool_call" and sent[-2]["input"] == PATCH
    assert sent[-1] == {"type": "custom_tool_call_output", "call_id": sent[-2]["call_id"], "output": completed["output"]}
