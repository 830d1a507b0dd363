"""Wire fixtures: a real in-process daemon (unix socket + loopback TCP) and a client."""

from __future__ import annotations

from typing import Any, AsyncIterator

import pytest

from tests.wire.helpers import start_daemon, stop_daemon


@pytest.fixture
async def wired(tmp_path: Any, mock_upstream: Any, nursery: Any) -> AsyncIterator[Any]:
    daemon = await start_daemon(nursery, tmp_path / "state", mock_upstream.base_url)
    yield daemon
    await stop_daemon(daemon)


@pytest.fixture
async def client(wired: Any) -> AsyncIterator[Any]:
    from echsd.wire.client import connect

    async with connect(state_dir=wired.settings.state_dir) as connection:
        yield connection
