"""Several real ``echsd serve`` processes (nodes) over one throwaway PostgreSQL database."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Iterator

import pytest

from tests.cli.helpers import Serve
from tests.pgcluster import TEST_DB_PREFIX, TempCluster

LEASE_S = 1.5  # short, so that failover happens within a test


class Nodes:
    """Starts nodes on one database; each has its own state dir (socket, token)."""

    def __init__(self, tmp_path: Path, url: str) -> None:
        self.tmp_path = tmp_path
        self.url = url
        self.started: dict[str, Serve] = {}

    def start(self, node_id: str, lease_s: float = LEASE_S, extra: tuple[str, ...] = (), tuning: str = "") -> Serve:
        """``tuning``: more lines for the node's ``[tuning]`` table."""
        state = self.state_dir(node_id)
        state.mkdir(parents=True, exist_ok=True)
        (state / "config.toml").write_text(f"[tuning]\nlease_s = {lease_s}\n{tuning}\n")
        serve = Serve(state, "--store", self.url, "--node-id", node_id, *extra)
        self.started[node_id] = serve
        return serve

    def state_dir(self, node_id: str) -> Path:
        return self.tmp_path / node_id / "state"

    def stop_all(self) -> None:
        for serve in self.started.values():
            if serve.process is not None and serve.process.poll() is None:
                serve.process.kill()
                serve.process.wait(15)


@pytest.fixture
def nodes(tmp_path: Path, pg_cluster: TempCluster) -> Iterator[Nodes]:
    name = f"{TEST_DB_PREFIX}cluster_{secrets.token_hex(4)}"
    url = pg_cluster.create_database(name)
    started = Nodes(tmp_path, url)
    try:
        yield started
    finally:
        started.stop_all()
