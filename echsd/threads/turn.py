"""One turn: model request, stream, tools, repeat, until the model stops calling tools.

The turn runs in its own cancel scope, created with the turn so an interrupt can arrive
before the task even starts. Interrupt, pause, kill and shutdown all cancel that scope;
cancellation is never caught as an error (trio.Cancelled is not an ``Exception``). Steered
input is delivered before every model request, and a steer that arrives after the last
response keeps the turn going instead of starting a new one.

The turn only emits through the actor's log and only changes history through
``actor.append_items``, which keeps items and their events in one store unit.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import trio

from echsd.codex import (
    Completed,
    ItemDone,
    ModelError,
    ReasoningDelta,
    ResponsesRequest,
    TextDelta,
    Usage,
)
from echsd.logs import get_logger
from echsd.threads.history import CALL_TYPES, last_assistant_text, normalize_model_item
from echsd.threads.tool_runner import run_tool_calls

if TYPE_CHECKING:
    from echsd.threads.actor import ThreadActor

log = get_logger(__name__)


@dataclass
class TurnOutcome:
    status: str  # completed | interrupted | error
    reason: str | None = None  # for interrupted: interrupt | pause | kill | shutdown
    error: dict[str, str] | None = None  # for error: {code, message}


@dataclass
class Turn:
    turn_id: str
    input_ids: list[str]
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    end_reason: str | None = None  # why the turn is being ended from outside
    accepting_steer: bool = True
    usage: Usage = field(default_factory=Usage)
    requests: int = 0
    finished: trio.Event = field(default_factory=trio.Event)
    started_at: float = field(default_factory=time.monotonic)

    def end(self, reason: str) -> None:
        """Ask the turn to stop now (idempotent; the first reason wins)."""
        if self.end_reason is None:
            self.end_reason = reason
        self.accepting_steer = False
        self.scope.cancel()

    @property
    def ending(self) -> bool:
        return self.end_reason is not None


async def run_turn(actor: "ThreadActor", turn: Turn) -> TurnOutcome:
    """Run the loop inside the turn's scope and classify how it ended."""
    outcome: TurnOutcome | None = None
    with turn.scope:
        try:
            await _loop(actor, turn)
            outcome = TurnOutcome("completed")
        except ModelError as exc:
            log.warning("turn failed at the model", thread_id=actor.thread_id, turn_id=turn.turn_id, code=exc.code, error=exc.message)
            outcome = TurnOutcome("error", error={"code": exc.code, "message": exc.message})
        except Exception as exc:  # our own bug: contained to this turn
            log.exception("turn crashed", thread_id=actor.thread_id, turn_id=turn.turn_id)
            outcome = TurnOutcome("error", error={"code": "internal", "message": f"{type(exc).__name__}: {exc}"})
    if turn.end_reason is not None:
        return TurnOutcome("interrupted", reason=turn.end_reason)
    assert outcome is not None
    return outcome


async def _loop(actor: "ThreadActor", turn: Turn) -> None:
    while True:
        await actor.deliver_steers(turn)
        calls = await _one_response(actor, turn)
        if calls:
            await run_tool_calls(actor, turn, calls)
            continue
        if actor.has_steers():
            continue
        turn.accepting_steer = False  # no checkpoint since has_steers(): no steer can slip past
        return


def build_request(actor: "ThreadActor") -> ResponsesRequest:
    config = actor.record.config
    tools = [actor.tools[name].spec.to_model() for name in config.tools if name in actor.tools]
    return ResponsesRequest(
        model=config.model,
        instructions=config.rendered_instructions(),
        input=list(actor.history),
        tools=tools,
        parallel_tool_calls=True,
        reasoning_effort=config.reasoning,
        prompt_cache_key=actor.thread_id,
    )


async def _one_response(actor: "ThreadActor", turn: Turn) -> list[dict[str, Any]]:
    """Stream one model response; completed items go to history as they finish."""
    request = build_request(actor)
    turn.requests += 1
    calls: list[dict[str, Any]] = []
    log_ = actor.log
    turn_id = turn.turn_id
    async with actor.client.stream(request) as events:
        async for event in events:
            if isinstance(event, TextDelta):
                await log_.ready()
                log_.emit_one("turn.delta", {"turn_id": turn_id, "item_id": event.item_id, "delta": event.delta})
            elif isinstance(event, ReasoningDelta):
                await log_.ready()
                log_.emit_one("turn.reasoning_delta", {"turn_id": turn_id, "item_id": event.item_id, "delta": event.delta})
            elif isinstance(event, ItemDone):
                item = normalize_model_item(event.item)
                await actor.append_items([item], turn_id)
                if item.get("type") in CALL_TYPES:
                    calls.append(item)
            elif isinstance(event, Completed):
                turn.usage = _add_usage(turn.usage, event.usage)
    return calls


def _add_usage(total: Usage, more: Usage) -> Usage:
    return Usage(
        input_tokens=total.input_tokens + more.input_tokens,
        cached_tokens=total.cached_tokens + more.cached_tokens,
        output_tokens=total.output_tokens + more.output_tokens,
        reasoning_tokens=total.reasoning_tokens + more.reasoning_tokens,
    )


def final_text(actor: "ThreadActor", since_index: int) -> str:
    return last_assistant_text(actor.history[since_index:])
