"""Escalation through the wire: ``exec_command {sandbox_permissions: "require_escalated"}``
waits for a person whatever the thread's approval policy; approved with ``echs approve`` it
runs outside the sandbox (the kernel lets it write where the sandbox would not), denied
with ``echs deny`` it does not run at all."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.cli.helpers import Serve, client_for, echs, new_thread, of_type, wait_event


def escalated(cmd: str) -> dict[str, Any]:
    arguments = {"cmd": cmd, "sandbox_permissions": "require_escalated", "justification": "Write the report next door?"}
    return {"name": "exec_command", "arguments": arguments}


async def escalate_and_answer(serve: Serve, cwd: Path, cmd: str, answer: str) -> tuple[dict[str, Any], str, str]:
    """The request, how ``echs approvals`` lists it, and the call's output once answered."""
    tid = new_thread(serve.state_dir, "--cwd", str(cwd))  # approval: never (the default)
    script = "mock: " + json.dumps({"steps": [{"calls": [escalated(cmd)]}, {"text": "done"}]})
    assert echs(serve.state_dir, "send", tid, script).returncode == 0
    async with client_for(serve.state_dir) as client:
        asked = await wait_event(client, tid, of_type("approval.requested"))
        listed = echs(serve.state_dir, "approvals", tid).stdout
        answered = echs(serve.state_dir, answer, asked["data"]["request_id"])
        assert answered.returncode == 0, answered.stderr
        done = await wait_event(client, tid, of_type("tool.completed"))
    return asked["data"], listed, done["data"]["output"]


async def test_an_approved_escalation_runs_outside_the_sandbox(serve: Serve, tmp_path: Path) -> None:
    cwd, sibling = tmp_path / "cwd", tmp_path / "sibling"
    cwd.mkdir()
    sibling.mkdir()
    asked, listed, output = await escalate_and_answer(serve, cwd, f"echo escaped > {sibling}/report", "approve")
    assert asked["summary"].startswith("outside the sandbox: echo escaped")
    assert asked["arguments"]["justification"] == "Write the report next door?"
    assert "outside the sandbox: echo escaped" in listed and "(why: Write the report next door?)" in listed, listed
    assert "Process exited with code 0" in output
    assert (sibling / "report").read_text() == "escaped\n"


async def test_a_denied_escalation_does_not_run(serve: Serve, tmp_path: Path) -> None:
    cwd, sibling = tmp_path / "cwd", tmp_path / "sibling"
    cwd.mkdir()
    sibling.mkdir()
    _asked, _listed, output = await escalate_and_answer(serve, cwd, f"echo ran > {cwd}/ran; echo escaped > {sibling}/report", "deny")
    assert "refused to run this command outside the sandbox" in output and "did not run" in output
    assert not (sibling / "report").exists() and not (cwd / "ran").exists()
