"""One turn: model request, stream, tools, repeat, until the model stops calling tools.

The turn runs inside a cancel scope owned by the actor; interrupt, pause, kill and shutdown
cancel it. Cancellation is never caught as an error (``trio.Cancelled`` is not an
``Exception``). Steered input is delivered before every model request, and a steer that
arrives after the last response keeps the turn going instead of starting a new one.

The loop sees its thread only through ``TurnHost``: it emits deltas, appends items (each
with its ``item.completed`` event, in one store unit) and never touches state itself.

The endpoint's notices become events and thread facts: each retry the client makes is a
``turn.retry`` event (clients show it instead of silence), rate limits an
``account.rate_limits`` event; a refused reasoning summary is remembered by the client for
the endpoint, and reasoning items the endpoint could not read leave the thread's history.
A stream that breaks after output started is requested again with the same retry budget, its partial output left out of the history. Before a
request that would pass the model's compaction threshold, and after the endpoint refused
one as too long, the history's older part is compacted (``compaction.py``).
"""

from __future__ import annotations

from typing import Any

from echsd.events import TurnDelta, TurnReasoningDelta, TurnRetry
from echsd.codex import (
    BadModelRequest,
    Completed,
    ContextWindowExceeded,
    ItemDone,
    ModelError,
    OutputInterrupted,
    RateLimitsUpdated,
    ReasoningDelta,
    ReasoningDropped,
    ResponsesRequest,
    Retrying,
    RetryBudget,
    SummaryUnavailable,
    TextDelta,
)
from echsd.logs import get_logger
from echsd.threads.autorun import instructions_note
from echsd.threads.history import CALL_TYPES
from echsd.threads.host import TurnHost
from echsd.threads.oversize import USABLE_SHARE
from echsd.threads.prompt import input_budget, prompt_and_tools
from echsd.threads.tool_runner import run_tool_calls

log = get_logger(__name__)


async def run_turn(host: TurnHost) -> tuple[str, dict[str, str] | None]:
    """Run the loop; returns how it ended by itself: ("completed", None) or ("error", error).

    A turn ended from outside never returns here: its scope is cancelled, and the core
    already knows why.
    """
    try:
        await _loop(host)
        return "completed", None
    except ModelError as exc:
        log.warning("turn failed at the model", thread_id=host.thread_id, turn_id=host.turn_id, code=exc.code, error=exc.message)
        return "error", {"code": exc.code, "message": exc.message}
    except Exception as exc:  # our own bug: contained to this turn
        log.exception("turn crashed", thread_id=host.thread_id, turn_id=host.turn_id)
        return "error", {"code": "internal", "message": f"{type(exc).__name__}: {exc}"}


async def _loop(host: TurnHost) -> None:
    while True:
        await host.deliver_steers()
        calls, repeated = await _fitting_response(host)
        if calls:
            await run_tool_calls(host, calls, repeated)
            continue
        if host.settle():  # steers arrived after the last response: answer them in this turn
            continue
        return


def build_request(host: TurnHost) -> ResponsesRequest:
    config = host.config
    run = host.autorun
    instructions, tools = prompt_and_tools(config, host.client.catalog, host.tools, subagent=host.parent is not None)
    anchor = host.chain_anchor
    history = host.history
    return ResponsesRequest(
        model=config.model,
        instructions=instructions + (instructions_note(run) if run else ""),
        input=list(history[anchor[1] :] if anchor else history),
        previous_response_id=anchor[0] if anchor else None,
        store=config.chain and host.client.endpoint.stores_responses,
        tools=tools,
        parallel_tool_calls=True,
        reasoning_effort=config.reasoning,
        prompt_cache_key=host.thread_id,
        session_id=host.thread_id,
    )


Calls = tuple[list[dict[str, Any]], dict[str, str]]  # a response's calls; renamed repeats -> the call_id they repeated


def _room(host: TurnHost, share: float) -> int:
    """Tokens the history may take in ``share`` of the model's window, the prompt and tools counted."""
    return input_budget(host.config, host.client.catalog, host.tools, subagent=host.parent is not None, share=share)[1]


async def _fitting_response(host: TurnHost) -> Calls:
    """One response. A history past the model's window is cut down first (``oversize``);
    one nearly full is compacted first, and compacted once more (then retried) when the
    endpoint says it is too long, or, when that cannot help, cut down to half the window.
    At most once each per request, so a history that cannot shrink fails the turn instead
    of looping."""
    room = _room(host, USABLE_SHARE)
    if host.context_tokens() > room:
        await host.fit_window(room)
    compacted = host.context_full() and await host.compact("auto")
    try:
        return await _one_response(host)
    except ContextWindowExceeded:
        recovered = (not compacted and await host.compact("context_length_exceeded")) or await host.fit_window(_room(host, 0.5))
        if not recovered:
            raise
    return await _one_response(host)


async def _one_response(host: TurnHost) -> Calls:
    """One model response (requested again, within one retry budget, if its stream breaks
    after output started); returns its function calls."""
    budget = host.client.retry_budget()
    while True:
        start = len(host.history)
        host.activity.model_started(host.config.model)
        try:
            return await _stream(host, budget)
        except OutputInterrupted as exc:
            await host.discard_since(start, f"the response broke off ({exc.message}) and is requested again")
        except BadModelRequest as exc:
            if exc.upstream_code != "previous_response_not_found" or host.chain_anchor is None:
                raise
            log.info("the endpoint lost the chained response; sending the whole history", thread_id=host.thread_id)
            host.drop_chain()
        finally:
            host.activity.model_ended()


async def _stream(host: TurnHost, budget: RetryBudget) -> Calls:
    """Stream one response; completed items go to history as they finish. A call that
    repeats the ``call_id`` of an earlier call of the response (a malformed or hostile
    response) gets an id of its own, so every call keeps exactly one output; the tool
    runner answers it with an error instead of running it."""
    calls: list[dict[str, Any]] = []
    call_ids: set[str] = set()
    repeated: dict[str, str] = {}
    turn_id = host.turn_id
    emit = host.emit
    partial = host.partial  # the message being streamed, kept if the turn is interrupted
    partial.clear()
    await host.tools.prepare(host.config.mcp)  # MCP servers up (bounded) and their tool lists current
    async with host.client.stream(build_request(host), budget=budget) as events:
        async for batch in events.batches(join=host.tuning.join_deltas):  # per receive; one item's deltas joined
            for event in batch:
                if isinstance(event, TextDelta):
                    partial.append(event.delta)
                    await emit(TurnDelta, {"turn_id": turn_id, "item_id": event.item_id, "delta": event.delta})
                elif isinstance(event, ReasoningDelta):
                    await emit(TurnReasoningDelta, {"turn_id": turn_id, "item_id": event.item_id, "delta": event.delta})
                elif isinstance(event, ItemDone):
                    partial.clear()
                    item = event.item
                    if item.get("type") in CALL_TYPES:
                        item = _distinct_call_id(item, call_ids, repeated)
                        calls.append(item)
                    await host.append_items([item])
                elif isinstance(event, Completed):
                    host.add_usage(event.usage)
                    host.note_response(event.response_id)
                else:
                    await _notice(host, event)
    return calls, repeated


def _distinct_call_id(item: dict[str, Any], seen: set[str], repeated: dict[str, str]) -> dict[str, Any]:
    """``item``, or a copy under a fresh ``call_id`` if an earlier call of the response has its id."""
    call_id = str(item.get("call_id", ""))
    if call_id not in seen:
        seen.add(call_id)
        return item
    number = 2
    while f"{call_id}~{number}" in seen:
        number += 1
    fresh = f"{call_id}~{number}"
    seen.add(fresh)
    repeated[fresh] = call_id
    log.warning("a model response repeated a call_id; the repeat gets its own id and does not run", call_id=call_id, renamed=fresh)
    return {**item, "call_id": fresh}


async def _notice(host: TurnHost, event: Any) -> None:
    if isinstance(event, Retrying):
        host.activity.retrying(event.delay_s, event.attempt, event.max_retries, event.reason)
        data = {"attempt": event.attempt, "max_retries": event.max_retries, "delay_s": event.delay_s, "reason": event.reason, "code": event.code}
        await host.emit(TurnRetry, {"turn_id": host.turn_id, **data})
    elif isinstance(event, RateLimitsUpdated):
        await host.note_rate_limits(event.limits)
    elif isinstance(event, SummaryUnavailable):
        log.warning("reasoning summaries refused; the endpoint is not asked for them again", thread_id=host.thread_id, error=event.message)
    elif isinstance(event, ReasoningDropped):
        await host.drop_reasoning(f"reasoning the endpoint could not read left out ({event.removed} item(s))", event.keys)
