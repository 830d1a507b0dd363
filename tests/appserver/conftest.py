"""App-server fixtures: a real in-process daemon with the listener (unix socket + TCP)."""

from __future__ import annotations

from typing import Any, AsyncIterator

import pytest
import trio

from tests.appserver.helpers import AppClient, app_client, start_daemon


@pytest.fixture
async def appd(tmp_path: Any, mock_upstream: Any, nursery: Any) -> AsyncIterator[Any]:
    daemon = await start_daemon(nursery, tmp_path / "state", mock_upstream.base_url)
    yield daemon
    daemon.request_stop()
    with trio.fail_after(15):
        await daemon.wait_stopped()


@pytest.fixture
async def client(appd: Any) -> AsyncIterator[AppClient]:
    async with app_client(appd) as connected:
        await connected.initialize()
        yield connected
