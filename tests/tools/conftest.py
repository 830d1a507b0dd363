"""Leave no per-process cgroup directory behind once the tool tests are done."""

from __future__ import annotations

from typing import Iterator

import pytest


@pytest.fixture(autouse=True, scope="session")
def _close_containments() -> Iterator[None]:
    yield
    from echsd.tools.process import tool_processes
    from tests.tools.exec_helpers import available_mechanisms

    for mechanism in available_mechanisms().values():
        if mechanism is not None:
            mechanism.close()
    tool_processes().containment.close()
