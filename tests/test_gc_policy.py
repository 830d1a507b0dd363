"""``echsd serve`` tunes the collector: young collections every 10,000 allocations, and
what start-up loaded frozen once the daemon is ready (``echsd.service.gc_policy``)."""

from __future__ import annotations

import gc
from typing import Any, Iterator

import pytest
import trio

from echsd.daemon import Daemon
from echsd.service import gc_policy
from tests.helpers import make_settings


@pytest.fixture
def collector() -> Iterator[None]:
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


def test_tune_sets_the_thresholds(collector: None) -> None:
    gc_policy.tune()
    assert gc.get_threshold() == gc_policy.THRESHOLDS


@pytest.mark.parametrize("settle", [False, True])
async def test_a_ready_daemon_froze_what_start_up_loaded(collector: None, tmp_path: Any, mock_upstream: Any, nursery: trio.Nursery, settle: bool) -> None:
    gc.unfreeze()
    daemon = Daemon(make_settings(tmp_path / "state", mock_upstream.base_url), settle_gc=settle)
    await nursery.start(daemon.run)
    try:
        assert (gc.get_freeze_count() > 0) is settle  # an embedding program's collector is left alone
    finally:
        daemon.request_stop()
        await daemon.wait_stopped()
