"""``echs approvals``, ``approve`` and ``deny`` against a real daemon; ``new --parent``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.cli.helpers import client_for, echs, echs_async, new_thread, of_type, wait_event
from tests.helpers import mock_directive


def shell(cmd: str) -> dict[str, Any]:
    return {"name": "exec_command", "arguments": {"cmd": cmd}}


async def test_approve_and_deny_from_the_command_line(state: Path, tmp_path: Path) -> None:
    tid = new_thread(state, "--cwd", str(tmp_path), "--approval", "always")
    async with client_for(state) as client:
        await client.send(tid, mock_directive([{"calls": [shell("touch yes")]}, {"calls": [shell("touch no")]}, {"text": "ok"}]))
        first = await wait_event(client, tid, of_type("approval.requested"))
        listed = await echs_async(state, "approvals", tid, "--json")
        assert listed.returncode == 0 and [r["request_id"] for r in json.loads(listed.stdout)] == [first["data"]["request_id"]]
        human = await echs_async(state, "approvals")
        assert first["data"]["request_id"] in human.stdout.decode() and "touch yes" in human.stdout.decode()
        approved = await echs_async(state, "approve", first["data"]["request_id"], "--json")
        assert approved.returncode == 0 and json.loads(approved.stdout)["decision"] == "approve"
        second = await wait_event(client, tid, lambda e: e["event"] == "approval.requested" and e["data"]["request_id"] != first["data"]["request_id"])
        denied = await echs_async(state, "deny", second["data"]["request_id"])
        assert denied.returncode == 0 and "denied" in denied.stdout.decode()
        await wait_event(client, tid, of_type("turn.completed"))
        gone = await echs_async(state, "approve", second["data"]["request_id"])
        assert gone.returncode == 1 and "no pending approval" in gone.stderr.decode()
    assert (tmp_path / "yes").exists() and not (tmp_path / "no").exists()
    assert json.loads((await echs_async(state, "approvals", "--json")).stdout) == []


def test_new_with_a_parent(state: Path, tmp_path: Path) -> None:
    parent = new_thread(state, "--cwd", str(tmp_path))
    child = new_thread(state, "--cwd", str(tmp_path), "--parent", parent)
    assert json.loads(echs(state, "show", parent, "--json").stdout)["children"] == [child]
    assert json.loads(echs(state, "show", child, "--json").stdout)["parent"] == parent
