"""A client closed while its requests wait for a hung daemon: they fail with
``connection_lost`` at once instead of waiting forever (found by the soak, whose
reconnecting clients closed connections with requests in flight)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
import trio
import trio.testing

from echsd.wire.client import Client, WireError, connect
from tests.cli.helpers import Serve

ASKERS = 3


async def test_requests_in_flight_fail_when_the_client_closes(tmp_path: Path) -> None:
    state = tmp_path / "state"
    daemon = await trio.to_thread.run_sync(Serve, state)
    assert daemon.process is not None
    codes: list[str] = []

    async def ask(client: Client) -> None:
        with pytest.raises(WireError) as info:
            await client.request("status", {})
        codes.append(info.value.code)

    try:
        with trio.fail_after(15):  # before the fix, the requests waited for ever
            async with trio.open_nursery() as nursery, connect(state_dir=state) as client:
                os.kill(daemon.process.pid, signal.SIGSTOP)  # hung: it answers nothing more
                for _ in range(ASKERS):
                    nursery.start_soon(ask, client)
                await trio.testing.wait_all_tasks_blocked()  # each request sent, its answer awaited
                assert codes == []
    finally:
        os.kill(daemon.process.pid, signal.SIGCONT)
        daemon.kill()
    assert codes == ["connection_lost"] * ASKERS
