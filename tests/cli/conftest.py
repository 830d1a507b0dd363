"""CLI fixtures: one real ``echsd serve --provider mock`` subprocess per test module
(every test makes its own threads, so sharing the daemon is safe), listening on its unix
socket and on a loopback TCP port; and a gate path for tool commands."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.cli.helpers import Serve, free_port, serving


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Serve]:
    state = tmp_path_factory.mktemp("cli") / "state"
    yield from serving(state, "--listen", f"unix://{state / 'echsd.sock'}", "--listen", f"tcp://127.0.0.1:{free_port()}")


@pytest.fixture(scope="module")
def small_frames(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The state dir of a daemon whose frame limit is the smallest allowed (64 KiB), so
    paging and frame-limit paths are reached with small threads (one event per model
    delta: a reply is many events)."""
    state = tmp_path_factory.mktemp("small") / "state"
    state.mkdir(mode=0o700)
    (state / "config.toml").write_text("[tuning]\nmax_message_bytes = 65536\njoin_deltas = false\n")
    daemon = Serve(state)
    yield state
    daemon.kill()


@pytest.fixture
def state(serve: Serve) -> Path:
    """The shared daemon's state dir (``--state-dir`` for echs)."""
    return serve.state_dir


@pytest.fixture
def gate(tmp_path: Any) -> Path:
    """A path whose creation lets a gated tool command finish."""
    return Path(tmp_path) / "gate"
