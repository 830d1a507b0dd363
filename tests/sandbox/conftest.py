"""A sandbox runtime of its own per test (its fork server is stopped afterwards)."""

from __future__ import annotations

from pathlib import Path
from typing import AsyncIterator

import pytest

from echsd.tools.sandbox.runtime import SandboxRuntime
from tests.sandbox.helpers import Confined, confined_tool


@pytest.fixture
async def confined(tmp_path: Path) -> AsyncIterator[Confined]:
    state = tmp_path / "state"
    state.mkdir()
    (state / "token").write_text("secret")
    runtime = SandboxRuntime(hidden=[str(state)], tmp_root=str(tmp_path / "tmproot"))
    (tmp_path / "tmproot").mkdir()
    support = await runtime.start()
    if not support.landlock_abi or not support.namespaces:
        await runtime.aclose()
        pytest.skip(f"the full sandbox is not available here: {support.problems}")
    try:
        yield Confined(runtime, confined_tool(runtime))
    finally:
        await runtime.aclose()
