"""Fixtures: a real store file in tmp_path, its writer running in the test's nursery."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio

from echsd.events import Event
from echsd.store import Store


def ev(
    thread_id: str, seq: int, type: str = "turn.delta", ts: float | None = None, **data: Any
) -> Event:
    return Event(
        thread_id=thread_id, seq=seq, type=type, ts=float(seq) if ts is None else ts, data=data
    )


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "echsd.db"


@pytest.fixture
async def store(db_path: Path, nursery: trio.Nursery) -> AsyncIterator[Store]:
    """An open store whose writer runs until the test ends (then aclose + close)."""
    s = Store.open(db_path)
    await nursery.start(s.writer.run)
    yield s
    await s.writer.aclose()
    s.close()
