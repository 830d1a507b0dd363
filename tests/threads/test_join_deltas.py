"""A model's deltas of one item that arrive together are one ``turn.delta`` (stored and
sent); deltas that come one at a time go out one at a time (``[tuning] join_deltas``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from echsd.store import queries
from tests.helpers import Watch, mock_directive


async def _reply(daemon: Any, workdir: Path, step: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    """The turn's live ``turn.delta`` events, and the stored ones."""
    tid = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    async with Watch(daemon, tid) as watch:
        await daemon.ops.send(tid, "go\n" + mock_directive(step))
        await watch.wait_type("turn.completed")
    await daemon.store.writer.flush()
    stored = await daemon.store.read(lambda conn: queries.read_events(conn, tid, 0, None))
    return watch.of_type("turn.delta"), [e for e in stored if getattr(e, "type", None) == "turn.delta"]


async def test_a_burst_is_a_few_events_holding_every_delta(daemon: Any, workdir: Path) -> None:
    live, stored = await _reply(daemon, workdir, {"repeat": {"chunk": "tok ", "count": 3000}, "chunks": "event"})
    assert "".join(e.data["delta"] for e in live) == "tok " * 3000
    assert len(live) < 300  # thousands of model deltas, a few events
    assert [(e.seq, e.data) for e in stored] == [(e.seq, e.data) for e in live]  # the log holds what clients got
    assert len({e.data["item_id"] for e in live}) == 1


async def test_deltas_that_come_apart_go_out_apart(daemon: Any, workdir: Path) -> None:
    live, _ = await _reply(daemon, workdir, {"text": "one two three four five", "delay_ms": 100})
    assert "".join(e.data["delta"] for e in live) == "one two three four five"
    assert len(live) >= 3  # none waits for the next (only a loop stalled 100 ms could join two)
