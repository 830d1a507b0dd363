"""Approvals as server requests: echsd's ``approval.requested`` becomes
``item/.../requestApproval``; accept/decline/cancel map to approve, deny, deny+interrupt."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.appserver.helpers import AppClient, app_client
from tests.helpers import mock_directive

COMMAND = {"name": "exec_command", "arguments": {"cmd": "touch made.txt && echo made"}}


async def _waiting_command(client: AppClient, workdir: Path) -> tuple[str, str, dict[str, Any]]:
    """A thread whose turn waits for approval of COMMAND: (thread, turn, the request)."""
    started = await client.start_thread(cwd=str(workdir), approvalPolicy="untrusted")
    assert started["approvalPolicy"] == "untrusted"
    thread = started["thread"]["id"]
    turn = await client.run_turn(thread, mock_directive([{"calls": [COMMAND]}, {"text": "finished"}]))
    request = await client.server_request("item/commandExecution/requestApproval")
    return thread, turn, request


async def test_accept_runs_the_command(client: AppClient, appd: Any, workdir: Path) -> None:
    thread, turn, request = await _waiting_command(client, workdir)
    params = request["params"]
    item = next(p["item"] for p in client.of_method("item/started") if p["item"]["type"] == "commandExecution")
    assert (params["threadId"], params["turnId"], params["itemId"]) == (thread, turn, item["id"])
    assert params["command"] == item["command"] and params["cwd"] == str(workdir)
    await client.notification("thread/status/changed", status={"type": "active", "activeFlags": ["waitingOnApproval"]})
    assert not (workdir / "made.txt").exists()
    at = len(client.messages)
    await client.answer(request["id"], {"decision": "accept"})
    resolved = await client.notification("serverRequest/resolved", after=at)
    assert resolved == {"threadId": thread, "requestId": request["id"]}
    done = await client.notification("item/completed", after=at)
    assert done["item"]["status"] == "completed" and done["item"]["aggregatedOutput"] == "made\n"
    assert (await client.notification("turn/completed"))["turn"]["status"] == "completed"
    assert (workdir / "made.txt").exists()


async def test_decline_keeps_the_turn_going(client: AppClient, workdir: Path) -> None:
    thread, turn, request = await _waiting_command(client, workdir)
    await client.answer(request["id"], {"decision": "decline"})
    completed = await client.wait_for(lambda m: m.get("method") == "item/completed" and m["params"]["item"]["type"] == "commandExecution")
    assert completed["params"]["item"]["status"] == "declined" and completed["params"]["turnId"] == turn
    done = await client.notification("turn/completed")
    assert done["turn"]["status"] == "completed"
    assert not (workdir / "made.txt").exists()


async def test_cancel_declines_and_interrupts_the_turn(client: AppClient, workdir: Path) -> None:
    thread, turn, request = await _waiting_command(client, workdir)
    await client.answer(request["id"], {"decision": "cancel"})
    done = await client.notification("turn/completed")
    assert done["turn"]["status"] == "interrupted" and done["turn"]["id"] == turn
    item = next(p["item"] for p in client.of_method("item/completed") if p["item"]["type"] == "commandExecution")
    assert item["status"] == "declined"
    assert not (workdir / "made.txt").exists()


async def test_a_patch_asks_for_a_file_change_approval(client: AppClient, workdir: Path) -> None:
    thread = (await client.start_thread(cwd=str(workdir), approvalPolicy="untrusted"))["thread"]["id"]
    patch = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n"
    turn = await client.run_turn(thread, mock_directive([{"calls": [{"name": "apply_patch", "arguments": {"input": patch}}]}, {"text": "ok"}]))
    request = await client.server_request("item/fileChange/requestApproval")
    assert request["params"]["turnId"] == turn and "a.txt" in request["params"]["reason"]
    await client.answer(request["id"], {"decision": "acceptForSession"})
    assert (await client.notification("turn/completed"))["turn"]["status"] == "completed"
    assert (workdir / "a.txt").read_text() == "hi\n"


async def test_every_watching_client_is_asked_and_told_when_it_is_settled(client: AppClient, appd: Any, workdir: Path) -> None:
    thread, _turn, request = await _waiting_command(client, workdir)
    async with app_client(appd, "tcp") as other:
        await other.initialize()
        await other.call("thread/resume", {"threadId": thread})  # attaching mid-approval: asked too
        asked = await other.server_request("item/commandExecution/requestApproval")
        assert asked["params"]["itemId"] == request["params"]["itemId"]
        pending = await appd.ops.approvals()
        await appd.ops.respond_approval(pending[0]["request_id"], "approve")  # as `echs approve` does
        for watcher, request_id in ((client, request["id"]), (other, asked["id"])):
            assert (await watcher.notification("serverRequest/resolved"))["requestId"] == request_id
        await other.answer(asked["id"], {"decision": "decline"})  # too late: changes nothing
        assert (await client.notification("turn/completed"))["turn"]["status"] == "completed"
    assert (workdir / "made.txt").exists()


@pytest.mark.parametrize("answer", [{"decision": "accept"}, None])
async def test_stray_answers_change_nothing(client: AppClient, answer: Any) -> None:
    await client.answer(12345, answer or {})
    thread = (await client.start_thread())["thread"]["id"]
    await client.run_turn(thread, "still here")
    assert (await client.notification("turn/completed"))["turn"]["status"] == "completed"
