"""Fixtures: a real mock upstream over HTTP, and a real in-process daemon on a temp state dir."""

from __future__ import annotations

from typing import Any, AsyncIterator, Iterator

import pytest

from tests.helpers import make_settings
from tests.pgcluster import TempCluster, missing_reason


@pytest.fixture
async def mock_upstream() -> AsyncIterator[Any]:
    from echsd.codex.mock import open_mock_upstream

    async with open_mock_upstream() as mock:
        yield mock


@pytest.fixture
async def daemon(tmp_path: Any, mock_upstream: Any, nursery: Any) -> AsyncIterator[Any]:
    from echsd.daemon import Daemon

    instance = Daemon(make_settings(tmp_path / "state", mock_upstream.base_url))
    await nursery.start(instance.run)
    yield instance
    instance.request_stop()
    await instance.wait_stopped()


@pytest.fixture
def workdir(tmp_path: Any) -> Any:
    path = tmp_path / "work"
    path.mkdir()
    return path


@pytest.fixture(autouse=True, scope="session")
def _subreaper() -> None:
    """Like the daemon, adopt orphans so killed tool processes are reaped, not left as zombies."""
    from echsd.tools.process import become_subreaper

    become_subreaper()


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[TempCluster]:
    """One throwaway PostgreSQL cluster for the whole session (skips where it cannot run)."""
    reason = missing_reason()
    if reason:
        pytest.skip(reason)
    cluster = TempCluster().start()
    try:
        yield cluster
    finally:
        cluster.stop()
