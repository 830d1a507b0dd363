"""Approvals over the wire: listed, answered once, and the call then runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from echsd.wire.client import WireError, connect
from tests.helpers import mock_directive


def shell_call(cmd: str) -> dict[str, Any]:
    return {"name": "exec_command", "arguments": {"cmd": cmd}}


async def test_approvals_over_the_wire(wired: Any, tmp_path: Path) -> None:
    async with connect(state_dir=wired.settings.state_dir) as client:
        tid = (await client.create_thread(cwd=str(tmp_path)))["thread_id"]
        await client.configure(tid, {"approval": "always"})
        async with client.events(tid) as events:
            await client.send(tid, mock_directive([{"calls": [shell_call("touch wired")]}, {"text": "ok"}]))
            async for event in events:
                if event["event"] == "approval.requested":
                    break
            pending = await client.approvals()
            assert [p["request_id"] for p in pending] == [event["data"]["request_id"]]
            assert await client.approvals(thread_id=tid) == pending
            answer = await client.respond_approval(event["data"]["request_id"], "approve")
            assert answer == {"request_id": event["data"]["request_id"], "decision": "approve", "thread_id": tid}
            with pytest.raises(WireError) as again:
                await client.respond_approval(event["data"]["request_id"], "deny")
            assert again.value.code == "not_found"
            async for event in events:
                if event["event"] == "turn.completed":
                    break
    assert (tmp_path / "wired").exists()
