"""Bring a thread's actor up from the store, closing whatever a crash left open.

Histories load lazily, when the actor starts. If the thread had a turn open (the daemon
died, or this worker crashed mid-turn), that turn is closed now, as ``turn.interrupted``
with reason ``restart`` (or ``turn.error`` after a worker crash), every dangling
function_call gets an output saying why, and steers that never reached the model wait at
the head of the queue. Queued input is kept; the actor resumes the queue once it runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from echsd.store import ops, queries
from echsd.threads.control import REPAIR_REASONS
from echsd.threads.eventlog import ThreadLog
from echsd.threads.history import repair
from echsd.threads.inputs import PendingInput
from echsd.threads.state import ThreadState

if TYPE_CHECKING:
    from echsd.threads.actor import ThreadActor


async def load_thread(actor: "ThreadActor", crashed: BaseException | None) -> None:
    store = actor.services.store
    thread_id = actor.thread_id
    if crashed is not None:
        await store.writer.flush()  # what the crashed incarnation emitted is on disk first

    def read(conn: Any) -> tuple[list[dict[str, Any]], list[Any], int, Any]:
        return (
            queries.load_items(conn, thread_id),
            queries.load_inputs(conn, thread_id, statuses=("queued", "steering")),
            queries.last_seq(conn, thread_id),
            queries.get_thread(conn, thread_id),
        )

    items, inputs, last_seq, row = await store.read(read)
    record = actor.record
    if record.log is None:
        record.log = ThreadLog(thread_id, store.writer, last_seq)
    if crashed is not None and row is not None:
        record.active_turn = row.active_turn  # the store is the truth after a crash
    actor.history = items
    # Steers (position 0) sort first: they never reached the model and go ahead of the queue.
    pending = [PendingInput.from_row(row_) for row_ in inputs]
    stranded = [p for p, row_ in zip(pending, inputs) if row_.status == "steering"]
    actor.queue.extend(pending)
    actor.next_position = max((p.position for p in pending), default=0) + 1
    record.queued = len(actor.queue)
    if record.active_turn is not None or stranded:
        await _close_open_turn(actor, crashed, stranded)
    elif record.state is ThreadState.RUNNING:
        record.state = ThreadState.IDLE


async def _close_open_turn(actor: "ThreadActor", crashed: BaseException | None, stranded: list[PendingInput]) -> None:
    record = actor.record
    turn_id = record.active_turn
    await actor.log.ready()
    events: list[tuple[str, dict[str, Any]]] = []
    statements: list[Any] = []
    for pending in stranded:
        statements.append(pending.write("queued"))
        events.append(("input.queued", {"input_id": pending.input_id, "position": 1}))
    if turn_id is None:
        await actor.log.emit(events, statements).wait()
        return
    fixes = repair(actor.history, REPAIR_REASONS["crash" if crashed else "restart"])
    if fixes:
        start = len(actor.history)
        actor.history.extend(fixes)
        statements.append(ops.append_items(actor.thread_id, start, fixes, turn_id))
        events.extend(("item.completed", {"turn_id": turn_id, "item": item}) for item in fixes)
    if crashed is not None:
        message = f"the thread worker crashed: {type(crashed).__name__}: {crashed}"
        events.append(("turn.error", {"turn_id": turn_id, "error": {"code": "internal", "message": message}}))
    else:
        events.append(("turn.interrupted", {"turn_id": turn_id, "reason": "restart"}))
    record.active_turn = None
    if record.state is ThreadState.RUNNING:
        record.state = ThreadState.IDLE
    events.append(("thread.state", {"state": record.state.value}))
    statements.append(ops.upsert_thread(record.to_row()))
    await actor.log.emit(events, statements).wait()
