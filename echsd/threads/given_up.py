"""A thread whose worker kept crashing: given up for a cool-down, still killable.

While given up, no worker runs: requests answer ``unavailable`` naming the reason and when
the thread will be tried again, and the next request after the cool-down restarts the
worker from the store. ``kill`` does not wait: it is applied to a core rebuilt from the
store, without the worker whose code kept failing, so a broken thread can always be stopped.
"""

from __future__ import annotations

from typing import Any

from echsd.store import Store, queries
from echsd.threads.core import ThreadCore
from echsd.threads.record import ThreadRecord


async def kill_offline(record: ThreadRecord, store: Store, reason: str) -> dict[str, Any]:
    """Kill a given-up thread without its worker: close whatever its crash left open, then
    kill, each as one committed unit, exactly as a running worker would have."""
    assert record.failed is not None
    record.failed.killing = True
    try:
        return await _kill(record, store, reason, record.failed.reason)
    finally:
        record.failed.killing = False


async def _kill(record: ThreadRecord, store: Store, reason: str, failure: str) -> dict[str, Any]:
    thread_id = record.thread_id
    await store.writer.flush()
    (items, turn_ids), inputs, row = await store.read(lambda conn: queries.load_for_recovery(conn, thread_id))
    if row is not None:
        record.core = ThreadCore.from_row(row, children=record.core.children)
    effects = record.core.recover(items, inputs, f"the worker was given up: {failure}", turn_ids)
    if effects.events or effects.statements:
        await record.log.ready()
        await record.log.emit(effects.events, effects.statements).wait()
    answer, effects = record.core.kill(reason)
    await record.log.ready()
    await record.log.emit(effects.events, effects.statements).wait()
    assert isinstance(answer, dict)  # recovery closed any turn: nothing to park on
    return answer
