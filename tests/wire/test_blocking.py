"""The blocking one-shot client: same protocol, same errors, no event loop."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from echsd.wire.blocking import blocking_connect, drive
from echsd.wire.client import WireError


async def test_requests_and_errors(wired: Any) -> None:
    state = str(wired.settings.state_dir)

    def session() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
        with blocking_connect(state_dir=state) as client:
            status = drive(client.status())
            thread = drive(client.create_thread(cwd=state))
            after = drive(client.status())
            listed = drive(client.list_threads())
            with pytest.raises(WireError) as missing:
                drive(client.get_thread("thr_0000000000000000"))
            assert missing.value.code == "not_found"
            history = drive(client.history(thread["thread_id"]))  # large answers arrive whole
            assert history == []
        return status, after, thread, listed

    status, after, thread, listed = await trio.to_thread.run_sync(session)
    assert status["version"] == after["version"]
    assert after["threads"]["total"] == status["threads"]["total"] + 1
    assert after["threads"]["idle"] == status["threads"]["idle"] + 1
    assert thread["thread_id"] in [t["thread_id"] for t in listed]


async def test_wrong_token_and_no_daemon(wired: Any, tmp_path: Path) -> None:
    state = str(wired.settings.state_dir)

    def wrong_token() -> None:
        with blocking_connect(state_dir=state, token="not-the-token"):
            pass

    with pytest.raises(WireError) as refused:
        await trio.to_thread.run_sync(wrong_token)
    assert refused.value.code == "unauthorized"

    def nobody_home() -> None:
        with blocking_connect(socket_path=str(tmp_path / "none.sock"), token="x"):
            pass

    with pytest.raises(WireError) as unreachable:
        await trio.to_thread.run_sync(nobody_home)
    assert unreachable.value.code == "unavailable"


def test_drive_refuses_actions_that_suspend() -> None:
    async def suspends() -> None:
        await trio.lowlevel.checkpoint()

    with pytest.raises(RuntimeError, match="suspend"):
        drive(suspends())
