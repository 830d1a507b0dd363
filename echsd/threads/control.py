"""Turn endings and thread control: interrupt, pause, resume, kill, shutdown, compact.

``finish_turn`` writes everything that closes a turn as one store unit: outputs for
dangling calls, usage, the terminal event, re-queued steers, the new state (and, for a
kill, the dropped inputs and ``thread.killed``). Replies parked by control requests are
answered only after that unit is committed, so "interrupted" really means it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from echsd.codex import ModelError
from echsd.errors import InvalidState, UpstreamError
from echsd.logs import get_logger
from echsd.store import ops
from echsd.threads.history import last_assistant_text, repair
from echsd.threads.inputs import PendingInput
from echsd.threads.record import USAGE_KEYS
from echsd.threads.state import ThreadState, Trigger, transition
from echsd.threads.turn import Turn, TurnOutcome

if TYPE_CHECKING:
    from echsd.threads.actor import ThreadActor

log = get_logger(__name__)

PARKED = object()  # a handler's result meaning "the reply comes later"
FOLD_EVERY_DELTAS = 1000  # check retention at a turn's end once this many deltas were logged

REPAIR_REASONS = {
    "interrupt": "the turn was interrupted before this call finished",
    "pause": "the thread was paused before this call finished",
    "kill": "the thread was killed before this call finished",
    "shutdown": "the daemon shut down before this call finished",
    "restart": "the daemon restarted before this call finished",
    "crash": "the thread worker crashed before this call finished",
    "error": "the turn ended in an error before this call finished",
}


async def finish_turn(actor: "ThreadActor", turn: Turn, outcome: TurnOutcome) -> None:
    await actor.log.ready()
    # --- synchronous from here to emit: decide and mutate ---
    events: list[tuple[str, dict[str, Any]]] = []
    statements: list[Any] = []
    reason_key = outcome.reason if outcome.status == "interrupted" else ("error" if outcome.status == "error" else None)
    if reason_key is not None:
        fixes = repair(actor.history, REPAIR_REASONS.get(reason_key, reason_key))
        if fixes:
            start = len(actor.history)
            actor.history.extend(fixes)
            statements.append(ops.append_items(actor.thread_id, start, fixes, turn.turn_id))
            events.extend(("item.completed", {"turn_id": turn.turn_id, "item": item}) for item in fixes)
    usage = {key: getattr(turn.usage, key) for key in USAGE_KEYS}
    for key, value in usage.items():
        actor.record.usage[key] = actor.record.usage.get(key, 0) + value
    events.append(("turn.usage", {"turn_id": turn.turn_id, **usage}))
    events.append(_terminal_event(actor, turn, outcome))
    if actor.steering:  # steers that could not join the turn wait at the head of the queue
        for pending in reversed(actor.steering):
            _requeue_front(actor, pending, events, statements)
        actor.steering = []
    actor.record.active_turn = None
    actor.turn = None
    if turn.end_reason == "kill":
        actor.record.state = transition(actor.record.state, Trigger.KILL)
        _kill_effects(actor, events, statements, "thread killed")
    else:
        trigger = Trigger.TURN_END_PAUSED if turn.end_reason == "pause" else Trigger.TURN_END
        actor.record.state = transition(actor.record.state, trigger)
        events.append(("thread.state", {"state": actor.record.state.value}))
    statements.append(ops.upsert_thread(actor.record.to_row()))
    if actor.log.deltas_since_fold >= FOLD_EVERY_DELTAS:
        # Retention: the turn's items hold the full text, so old deltas can go (as a gap).
        statements.append(ops.fold_deltas(actor.thread_id, keep=actor.tuning.retained_deltas))
        actor.log.deltas_since_fold = 0
    unit = actor.log.emit(events, statements)
    # --- end of synchronous section ---
    turn.finished.set()
    await unit.wait()
    _answer_parked(actor, turn, outcome)
    actor.services.supervisor.turn_finished(actor.record, outcome)


def _terminal_event(actor: "ThreadActor", turn: Turn, outcome: TurnOutcome) -> tuple[str, dict[str, Any]]:
    if outcome.status == "completed":
        return ("turn.completed", {"turn_id": turn.turn_id, "final_text": last_assistant_text(actor.history)})
    if outcome.status == "interrupted":
        return ("turn.interrupted", {"turn_id": turn.turn_id, "reason": outcome.reason})
    return ("turn.error", {"turn_id": turn.turn_id, "error": outcome.error})


def _requeue_front(actor: "ThreadActor", pending: PendingInput, events: list, statements: list) -> None:
    pending.position = 0
    actor.queue.appendleft(pending)
    actor.record.queued = len(actor.queue)
    statements.append(pending.write("queued"))
    events.append(("input.queued", {"input_id": pending.input_id, "position": 1}))


def _kill_effects(actor: "ThreadActor", events: list, statements: list, reason: str) -> None:
    for pending in [*actor.steering, *actor.queue]:
        statements.append(pending.write("dropped", reason=reason))
        events.append(("input.dropped", {"input_id": pending.input_id, "reason": reason}))
    actor.queue.clear()
    actor.steering = []
    actor.record.queued = 0
    events.append(("thread.killed", {"reason": reason}))
    events.append(("thread.state", {"state": ThreadState.KILLED.value}))


def _answer_parked(actor: "ThreadActor", turn: Turn, outcome: TurnOutcome) -> None:
    remaining = []
    for parked in actor.parked:
        parked_turn, reply, kind, extra = parked
        if parked_turn is not turn:
            remaining.append(parked)
            continue
        reply.set(_result(actor, kind, turn, outcome) | extra)
    actor.parked = remaining


def _result(actor: "ThreadActor", kind: str, turn: Turn, outcome: TurnOutcome) -> dict[str, Any]:
    interrupted = outcome.status == "interrupted"
    base = {"thread_id": actor.thread_id, "turn_id": turn.turn_id, "interrupted": interrupted, "state": actor.record.state.value}
    if kind == "pause":
        base["paused"] = actor.record.state is ThreadState.PAUSED
    if kind == "kill":
        base["killed"] = True
    return base


def _drop_queue(actor: "ThreadActor", reason: str) -> int:
    """Drop every queued input (sync; caller has awaited ready)."""
    dropped = list(actor.queue)
    if not dropped:
        return 0
    actor.queue.clear()
    actor.record.queued = 0
    actor.log.emit(
        [("input.dropped", {"input_id": p.input_id, "reason": reason}) for p in dropped],
        [p.write("dropped", reason=reason) for p in dropped],
    )
    return len(dropped)


async def interrupt(actor: "ThreadActor", reply: Any, clear_queue: bool) -> Any:
    actor.check_alive()
    cleared = 0
    if clear_queue:
        await actor.log.ready()
        cleared = _drop_queue(actor, "queue cleared by interrupt")
    turn = actor.turn
    if turn is None:
        return {"thread_id": actor.thread_id, "interrupted": False, "cleared": cleared, "state": actor.record.state.value}
    turn.end("interrupt")
    return actor.park(turn, reply, "interrupt", cleared=cleared)


async def pause(actor: "ThreadActor", reply: Any) -> Any:
    actor.check_alive()
    turn = actor.turn
    if turn is not None:
        turn.end("pause")
        return actor.park(turn, reply, "pause")
    await _apply(actor, Trigger.PAUSE)
    return {"thread_id": actor.thread_id, "interrupted": False, "paused": True, "state": actor.record.state.value}


async def resume(actor: "ThreadActor") -> dict[str, Any]:
    actor.check_alive()
    resumed = await _apply(actor, Trigger.RESUME)
    if resumed:
        await actor.start_next_if_possible()
    return {"thread_id": actor.thread_id, "resumed": resumed, "state": actor.record.state.value}


async def _apply(actor: "ThreadActor", trigger: Trigger) -> bool:
    """Move an idle/paused thread by ``trigger``; a real change is announced and stored."""
    await actor.log.ready()
    previous = actor.record.state
    actor.record.state = transition(previous, trigger)
    if actor.record.state is previous:
        return False
    unit = actor.log.emit_one("thread.state", {"state": actor.record.state.value}, ops.upsert_thread(actor.record.to_row()))
    await unit.wait()
    return True


async def kill(actor: "ThreadActor", reply: Any, reason: str) -> Any:
    actor.check_alive()
    turn = actor.turn
    if turn is not None:
        turn.end("kill")
        return actor.park(turn, reply, "kill")
    await actor.log.ready()
    actor.record.state = transition(actor.record.state, Trigger.KILL)
    events: list = []
    statements: list = []
    _kill_effects(actor, events, statements, reason)
    statements.append(ops.upsert_thread(actor.record.to_row()))
    await actor.log.emit(events, statements).wait()
    return {"thread_id": actor.thread_id, "interrupted": False, "killed": True, "state": actor.record.state.value}


async def shutdown(actor: "ThreadActor", reply: Any) -> Any:
    actor.stopping = True
    turn = actor.turn
    if turn is not None:
        turn.end("shutdown")
        return actor.park(turn, reply, "shutdown")
    return {"thread_id": actor.thread_id, "interrupted": False}


async def compact(actor: "ThreadActor") -> dict[str, Any]:
    config = actor.record.config
    before = len(actor.history)
    if before == 0:
        raise InvalidState("nothing to compact: the history is empty")
    try:
        replacement = await actor.client.compact(
            model=config.model, instructions=config.rendered_instructions(), input=list(actor.history)
        )
    except ModelError as exc:
        raise UpstreamError(f"compaction failed at the model endpoint: {exc.message}") from None
    await actor.log.ready()
    actor.history = list(replacement)
    unit = actor.log.emit_one(
        "thread.compacted",
        {"items_before": before, "items_after": len(replacement), "reason": "manual"},
        ops.replace_items(actor.thread_id, list(replacement)),
    )
    await unit.wait()
    return {"thread_id": actor.thread_id, "items_before": before, "items_after": len(replacement)}
