"""Run a response's tool calls and append one output item per call.

Calls run concurrently when every tool involved is parallel-safe, else one after another
in the model's order. Each output is appended (with ``tool.completed`` and
``item.completed``, in one store unit) as soon as its call finishes, so an interrupt keeps
every finished result. Whatever goes wrong inside a call (unknown tool, arguments that are
not JSON, a tool that raises or times out) becomes that call's output; the loop goes on.
"""

from __future__ import annotations

import time
from typing import Any

import trio

from echsd.logs import get_logger
from echsd.threads.history import function_call_output
from echsd.threads.host import TurnHost
from echsd.tools.args import check_arguments, parse_arguments
from echsd.tools.base import ToolError, ToolResult

log = get_logger(__name__)

TIMEOUT_GRACE_S = 5.0  # the runtime's own limit, past the tool's (tools enforce theirs first)


async def run_tool_calls(host: TurnHost, calls: list[dict[str, Any]]) -> None:
    tools = [host.tools.get(str(call.get("name", ""))) for call in calls]
    if len(calls) > 1 and all(tool is None or tool.spec.parallel_safe for tool in tools):
        async with trio.open_nursery() as nursery:
            for call in calls:
                nursery.start_soon(_run_one, host, call)
    else:
        for call in calls:
            await _run_one(host, call)


async def _run_one(host: TurnHost, call: dict[str, Any]) -> None:
    name = str(call.get("name", ""))
    call_id = str(call.get("call_id", ""))
    raw_arguments = call.get("arguments", call.get("input", ""))
    turn_id = host.turn_id
    await host.emit(
        "tool.started", {"turn_id": turn_id, "call_id": call_id, "name": name, "arguments": _display_arguments(raw_arguments)}
    )
    started = time.monotonic()
    result = await _invoke(host, name, call_id, raw_arguments)
    completed = {
        "turn_id": turn_id,
        "call_id": call_id,
        "name": name,
        "ok": result.ok,
        "output": result.output,
        "duration_ms": round((time.monotonic() - started) * 1000, 3),
        **result.meta,
    }
    output_item = function_call_output(call_id, result.output, call.get("type", "function_call"))
    await host.append_items([output_item], before=[("tool.completed", completed)])


async def _invoke(host: TurnHost, name: str, call_id: str, raw_arguments: Any) -> ToolResult:
    enabled = host.config.tools
    tool = host.tools.get(name) if name in enabled else None
    if tool is None:
        available = ", ".join(enabled) or "none"
        return ToolResult(f"error: unknown tool {name!r}; available tools: {available}", ok=False)
    context = host.tool_context(call_id)
    try:
        args = check_arguments(parse_arguments(raw_arguments), tool.spec.parameters)
        with trio.move_on_after(context.timeout_s + TIMEOUT_GRACE_S):
            return await tool.run(args, context)
        return ToolResult(f"error: tool {name} timed out after {context.timeout_s:g} s", ok=False)
    except ToolError as exc:
        return ToolResult(f"error: {exc}", ok=False)
    except Exception as exc:
        log.exception("tool crashed", thread_id=host.thread_id, tool=name, call_id=call_id)
        return ToolResult(f"error: tool {name} crashed: {type(exc).__name__}: {exc}", ok=False)


def _display_arguments(raw: Any) -> Any:
    """Arguments for the tool.started event: parsed when they are JSON, raw text otherwise."""
    try:
        return parse_arguments(raw)
    except ToolError:
        return raw
