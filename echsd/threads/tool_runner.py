"""Run a response's tool calls and append one output item per call.

Calls run concurrently when every tool involved is parallel-safe, else one after another
in the model's order. Each output is appended (with ``tool.completed`` and
``item.completed``, in one store unit) as soon as its call finishes, so an interrupt keeps
every finished result. Whatever goes wrong inside a call (unknown tool, arguments that are
not JSON, a tool that raises or times out) becomes that call's output; the loop goes on.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import trio

from echsd.logs import get_logger
from echsd.threads.history import function_call_output
from echsd.tools.args import check_arguments, parse_arguments
from echsd.tools.base import ToolContext, ToolError, ToolResult

if TYPE_CHECKING:
    from echsd.threads.actor import ThreadActor
    from echsd.threads.turn import Turn

log = get_logger(__name__)

TIMEOUT_GRACE_S = 5.0  # the runtime's own limit, past the tool's (tools enforce theirs first)


async def run_tool_calls(actor: "ThreadActor", turn: "Turn", calls: list[dict[str, Any]]) -> None:
    parallel = len(calls) > 1 and all(
        actor.tools[call.get("name", "")].spec.parallel_safe
        for call in calls
        if call.get("name") in actor.tools
    )
    if parallel:
        async with trio.open_nursery() as nursery:
            for call in calls:
                nursery.start_soon(_run_one, actor, turn, call)
    else:
        for call in calls:
            await _run_one(actor, turn, call)


async def _run_one(actor: "ThreadActor", turn: "Turn", call: dict[str, Any]) -> None:
    name = str(call.get("name", ""))
    call_id = str(call.get("call_id", ""))
    raw_arguments = call.get("arguments", call.get("input", ""))
    await actor.log.ready()
    actor.log.emit_one(
        "tool.started",
        {"turn_id": turn.turn_id, "call_id": call_id, "name": name, "arguments": _display_arguments(raw_arguments)},
    )
    started = time.monotonic()
    result = await _invoke(actor, turn, name, call_id, raw_arguments)
    duration_ms = round((time.monotonic() - started) * 1000, 3)
    output_item = function_call_output(call_id, result.output, call.get("type", "function_call"))
    completed = {
        "turn_id": turn.turn_id,
        "call_id": call_id,
        "name": name,
        "ok": result.ok,
        "output": result.output,
        "duration_ms": duration_ms,
        **result.meta,
    }
    await actor.append_items([output_item], turn.turn_id, before=[("tool.completed", completed)])


async def _invoke(actor: "ThreadActor", turn: "Turn", name: str, call_id: str, raw_arguments: Any) -> ToolResult:
    config = actor.record.config
    tool = actor.tools.get(name) if name in config.tools else None
    if tool is None:
        available = ", ".join(config.tools) or "none"
        return ToolResult(f"error: unknown tool {name!r}; available tools: {available}", ok=False)
    timeout_s = actor.tuning.tool_timeout_s

    async def emit_output(stream: str, chunk: str) -> None:
        await actor.log.ready()
        actor.log.emit_one("tool.output", {"turn_id": turn.turn_id, "call_id": call_id, "stream": stream, "chunk": chunk})

    context = ToolContext(
        thread_id=actor.thread_id,
        turn_id=turn.turn_id,
        call_id=call_id,
        cwd=actor.cwd_path(),
        emit_output=emit_output,
        timeout_s=timeout_s,
        services=actor.services.tool_services,
    )
    try:
        args = check_arguments(parse_arguments(raw_arguments), tool.spec.parameters)
        with trio.move_on_after(timeout_s + TIMEOUT_GRACE_S) as timer:
            return await tool.run(args, context)
        return ToolResult(f"error: tool {name} timed out after {timeout_s:g} s", ok=False)
    except ToolError as exc:
        return ToolResult(f"error: {exc}", ok=False)
    except Exception as exc:
        log.exception("tool crashed", thread_id=actor.thread_id, tool=name, call_id=call_id)
        return ToolResult(f"error: tool {name} crashed: {type(exc).__name__}: {exc}", ok=False)


def _display_arguments(raw: Any) -> Any:
    """Arguments for the tool.started event: parsed when they are JSON, raw text otherwise."""
    try:
        return parse_arguments(raw)
    except ToolError:
        return raw
