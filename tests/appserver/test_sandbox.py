"""The thread's real sandbox and approval policy through the Codex app-server protocol:
reported on thread/start and thread/resume, taken from thread/start and from a turn/start
that changes them, and the TUI's "approve for this session" mapped to echsd's "approve for
this thread" (the command prefix joins the thread's rules, so it is not asked again)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.appserver.helpers import AppClient, user_input
from tests.helpers import mock_directive


async def config_of(appd: Any, thread_uuid: str, client: AppClient) -> dict[str, Any]:
    name = (await client.call("thread/read", {"threadId": thread_uuid}))["thread"]["name"]
    return (await appd.ops.get_thread(name))["config"]


async def test_the_sandbox_is_reported_as_it_is_and_taken_from_thread_start(client: AppClient, appd: Any, workdir: Path) -> None:
    default = await client.start_thread(cwd=str(workdir))
    assert default["sandbox"] == {"type": "workspaceWrite", "writableRoots": [], "networkAccess": False, "excludeTmpdirEnvVar": False, "excludeSlashTmp": True}
    assert default["approvalPolicy"] == "never"
    read_only = await client.start_thread(cwd=str(workdir), sandbox="read-only", approvalPolicy="on-request")
    assert read_only["sandbox"] == {"type": "readOnly", "networkAccess": False} and read_only["approvalPolicy"] == "on-request"
    config = await config_of(appd, read_only["thread"]["id"], client)
    assert (config["sandbox"], config["approval"]) == ("read-only", "on-request")
    full = await client.start_thread(cwd=str(workdir), sandbox="danger-full-access", approvalPolicy="untrusted")
    assert full["sandbox"] == {"type": "dangerFullAccess"} and full["approvalPolicy"] == "untrusted"
    created = await appd.ops.create_thread(cwd=str(workdir), sandbox="workspace-write", network="on", writable_roots=[str(workdir)])
    resumed = await client.call("thread/resume", {"threadId": _uuid(created["thread_id"])})
    assert resumed["sandbox"]["type"] == "workspaceWrite" and resumed["sandbox"]["networkAccess"] is True
    assert resumed["sandbox"]["writableRoots"] == [str(workdir)]


def _uuid(thread_id: str) -> str:
    from echsd.appserver.ids import thread_uuid

    return thread_uuid(thread_id)


async def test_a_policy_the_client_changes_between_turns_becomes_the_threads(client: AppClient, appd: Any, workdir: Path) -> None:
    thread = (await client.start_thread(cwd=str(workdir)))["thread"]["id"]
    first = {**user_input(thread, mock_directive({"text": "one"})), "sandboxPolicy": {"type": "dangerFullAccess"}}
    await client.call("turn/start", first)
    await client.notification("turn/completed")
    config = await config_of(appd, thread, client)
    assert (config["sandbox"], config["approval"]) == ("workspace-write", "never")  # the first is only noted
    at = len(client.messages)
    second = {**user_input(thread, mock_directive({"text": "two"})), "sandboxPolicy": {"type": "readOnly"}, "approvalPolicy": "untrusted"}
    await client.call("turn/start", second)
    await client.notification("turn/completed", after=at)
    config = await config_of(appd, thread, client)
    assert (config["sandbox"], config["network"], config["approval"]) == ("read-only", "off", "on-write")


async def test_accept_for_session_approves_the_command_for_the_thread(client: AppClient, appd: Any, workdir: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    thread = (await client.start_thread(cwd=str(workdir), approvalPolicy="on-request"))["thread"]["id"]
    escalate = {"sandbox_permissions": "require_escalated", "justification": "Write next door?", "prefix_rule": ["touch"]}
    calls = [{"calls": [{"name": "exec_command", "arguments": {"cmd": f"touch {outside}/{name}", **escalate}}]} for name in ("one", "two")]
    await client.run_turn(thread, mock_directive([*calls, {"text": "done"}]))
    request = await client.server_request("item/commandExecution/requestApproval")
    assert request["params"]["reason"] == "Write next door?"
    assert request["params"]["proposedExecpolicyAmendment"] == ["touch"]
    await client.answer(request["id"], {"decision": "acceptForSession"})
    assert (await client.notification("turn/completed"))["turn"]["status"] == "completed"
    assert len([m for m in client.messages if m.get("method") == "item/commandExecution/requestApproval"]) == 1
    assert (outside / "one").exists() and (outside / "two").exists()
    assert (await config_of(appd, thread, client))["approval_allow"] == [["touch"]]
