"""A sandbox runtime of its own per test (its fork server is stopped afterwards), and one
real ``echsd serve --provider mock`` per test module for the tests through the tool loop."""

from __future__ import annotations

from pathlib import Path
from typing import AsyncIterator, Iterator

import pytest

from echsd.tools.sandbox.runtime import SandboxRuntime
from tests.cli.helpers import Serve, clean_env
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


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Serve]:
    root = tmp_path_factory.mktemp("sandboxed")
    (root / "home").mkdir()
    daemon = Serve(root / "state", env=clean_env(root / "home"))
    yield daemon
    try:
        daemon.terminate()
    finally:
        daemon.kill()


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, Path]:
    """A thread's cwd and a sibling directory it must not write to."""
    made = {name: tmp_path / name for name in ("cwd", "sibling")}
    for path in made.values():
        path.mkdir()
    return made
