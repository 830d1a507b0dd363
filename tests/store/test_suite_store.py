"""The switch that runs the daemon-level suite on PostgreSQL (ECHS_TEST_STORE) reaches the
daemons the tests start."""

from __future__ import annotations

from typing import Any

from tests.helpers import suite_store


async def test_test_daemons_run_on_the_suites_store(daemon: Any) -> None:
    assert daemon.store.dialect == suite_store()
    assert daemon.store.node_id == daemon.settings.node_id
