"""An in-process echsd on a fresh mock upstream, for the benches that time turns end to end."""

from __future__ import annotations

from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

import trio


@asynccontextmanager
async def daemon_on_mock(state: Path, home: str) -> AsyncIterator[tuple[Any, Any]]:
    """``(daemon, mock)``: the openai provider pointed at the mock, ``home`` as an empty HOME
    (no user profile or Codex login read); the daemon is stopped when the block ends."""
    from echsd.codex.mock import open_mock_upstream
    from echsd.daemon import Daemon
    from echsd.settings import load_settings

    async with open_mock_upstream() as mock, trio.open_nursery() as nursery:
        env = {"HOME": home, "CODEX_HOME": f"{home}/none"}
        settings = load_settings({"state_dir": str(state), "provider": "openai", "base_url": mock.base_url}, env)
        daemon = Daemon(settings)
        await nursery.start(daemon.run)
        assert daemon.ops is not None and daemon.hub is not None
        yield daemon, mock
        daemon.request_stop()
        await daemon.wait_stopped()
