"""One turn: model request, stream, tools, repeat, until the model stops calling tools.

The turn runs inside a cancel scope owned by the actor; interrupt, pause, kill and shutdown
cancel it. Cancellation is never caught as an error (``trio.Cancelled`` is not an
``Exception``). Steered input is delivered before every model request, and a steer that
arrives after the last response keeps the turn going instead of starting a new one.

The loop sees its thread only through ``TurnHost``: it emits deltas, appends items (each
with its ``item.completed`` event, in one store unit) and never touches state itself.
"""

from __future__ import annotations

from typing import Any

from echsd.codex import (
    Completed,
    ItemDone,
    ModelError,
    ReasoningDelta,
    ResponsesRequest,
    TextDelta,
)
from echsd.logs import get_logger
from echsd.threads.history import CALL_TYPES
from echsd.threads.host import TurnHost
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
        calls = await _one_response(host)
        if calls:
            await run_tool_calls(host, calls)
            continue
        if host.settle():  # steers arrived after the last response: answer them in this turn
            continue
        return


def build_request(host: TurnHost) -> ResponsesRequest:
    config = host.config
    tools = [tool.spec.to_model() for tool in host.tools.enabled(config.tools)]
    return ResponsesRequest(
        model=config.model,
        instructions=config.rendered_instructions(),
        input=list(host.history),
        tools=tools,
        parallel_tool_calls=True,
        reasoning_effort=config.reasoning,
        prompt_cache_key=host.thread_id,
    )


async def _one_response(host: TurnHost) -> list[dict[str, Any]]:
    """Stream one model response; completed items go to history as they finish."""
    calls: list[dict[str, Any]] = []
    turn_id = host.turn_id
    emit = host.emit
    async with host.client.stream(build_request(host)) as events:
        async for event in events:
            if isinstance(event, TextDelta):
                await emit("turn.delta", {"turn_id": turn_id, "item_id": event.item_id, "delta": event.delta})
            elif isinstance(event, ReasoningDelta):
                await emit("turn.reasoning_delta", {"turn_id": turn_id, "item_id": event.item_id, "delta": event.delta})
            elif isinstance(event, ItemDone):
                await host.append_items([event.item])
                if event.item.get("type") in CALL_TYPES:
                    calls.append(event.item)
            elif isinstance(event, Completed):
                host.add_usage(event.usage)
    return calls
