"""Workspace fixtures: one real ``echsd serve`` (built-in mock model) per test module."""

from __future__ import annotations

from typing import Iterator

import pytest

from tests.cli.helpers import Serve


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Serve]:
    daemon = Serve(tmp_path_factory.mktemp("workspace") / "state")
    yield daemon
    try:
        daemon.terminate()
    finally:
        daemon.kill()
