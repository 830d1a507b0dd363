"""Fixtures for the model-endpoint tests: a real mock upstream on loopback and fast clients."""

from __future__ import annotations

from typing import AsyncIterator

import pytest

from echsd.codex.mock import MockUpstream, open_mock_upstream
from tests.codex.helpers import RecordingBackoff


@pytest.fixture
async def mock() -> AsyncIterator[MockUpstream]:
    async with open_mock_upstream() as upstream:
        yield upstream


@pytest.fixture
def backoff() -> RecordingBackoff:
    return RecordingBackoff()
