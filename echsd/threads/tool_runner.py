"""Run a response's tool calls and append one output item per call.

Calls run concurrently when every tool involved is parallel-safe, else one after another
in the model's order. Each output is appended (with ``tool.completed`` and
``item.completed``, in one store unit) as soon as its call finishes, so an interrupt keeps
every finished result. Whatever goes wrong inside a call (unknown tool, arguments that are
not JSON, a tool that raises or times out, a denied approval) becomes that call's output;
the loop goes on.

Before a call runs: a custom (freeform) call's raw input becomes ``{"input": ...}``; an
``exec_command`` that is really ``apply_patch <<'EOF'`` is applied as a patch (as Codex
does); the thread's ``approval`` policy may make it wait for a client's answer. After it
runs, text output is capped (head and tail kept, with a marker saying what was cut).
"""

from __future__ import annotations

import time
from typing import Any

import trio

from echsd.logs import get_logger
from echsd.threads.approvals import needs_approval
from echsd.threads.history import function_call_output
from echsd.threads.host import TurnHost
from echsd.tools.apply_patch import ApplyPatchTool
from echsd.tools.apply_patch.shell import recognise_shell_patch
from echsd.tools.args import check_arguments, parse_arguments
from echsd.tools.base import Tool, ToolContext, ToolError, ToolResult
from echsd.tools.truncate import printable, truncate_middle

log = get_logger(__name__)

TIMEOUT_GRACE_S = 5.0  # the runtime's own limit, past the tool's (tools enforce theirs first)
MAX_OUTPUT_TOKENS = 16_000  # the cap on any one call's output the model reads
CHARS_PER_TOKEN = 4  # the estimate Codex uses
_PATCH_MARKERS = (("*** Add File:", "add"), ("*** Update File:", "update"), ("*** Delete File:", "delete"), ("*** Move to:", "move to"))
NOT_APPROVED = {
    "deny": "a user denied this call",
    "timeout": "nobody answered the approval request in time, so it was denied",
}


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
    turn_id = host.turn_id
    await host.emit("tool.started", {"turn_id": turn_id, "call_id": call_id, "name": name, "arguments": _display_arguments(call)})
    started = time.monotonic()
    result = await _invoke(host, name, call_id, call)
    output = result.output
    if isinstance(output, str):
        output = truncate_middle(printable(output), MAX_OUTPUT_TOKENS * CHARS_PER_TOKEN)
    completed = {
        "turn_id": turn_id,
        "call_id": call_id,
        "name": name,
        "ok": result.ok,
        "output": output if isinstance(output, str) else _described(output),
        "duration_ms": round((time.monotonic() - started) * 1000, 3),
        **result.meta,
    }
    output_item = function_call_output(call_id, output, call.get("type", "function_call"))
    await host.append_items([output_item], before=[("tool.completed", completed)])


async def _invoke(host: TurnHost, name: str, call_id: str, call: dict[str, Any]) -> ToolResult:
    offered = {tool.spec.name: tool for tool in host.tools.offered(host.config.tools)}
    tool = offered.get(name)
    if tool is None:
        available = ", ".join(offered) or "none"
        return ToolResult(f"error: unknown tool {name!r}; available tools: {available}", ok=False)
    context = host.tool_context(call_id)
    try:
        args = _arguments(tool, call)
        patch = _shell_patch(host, name, args)
        if patch is not None:  # an exec_command that applies a patch is an apply_patch call
            tool, name = patch, patch.spec.name
        if needs_approval(host.config.approval, tool.spec.writes):
            decision = await host.request_approval(call_id, name, args, _summary(name, args))
            if decision != "approve":
                return ToolResult(f"error: {NOT_APPROVED.get(decision, decision)}; the call did not run", ok=False, meta={"approval": decision})
        with trio.move_on_after(context.timeout_s + TIMEOUT_GRACE_S):
            return await _run(tool, args, context, intercepted=patch is not None)
        return ToolResult(f"error: tool {name} timed out after {context.timeout_s:g} s", ok=False)
    except ToolError as exc:
        return ToolResult(f"error: {exc}", ok=False)
    except Exception as exc:
        log.exception("tool crashed", thread_id=host.thread_id, tool=name, call_id=call_id)
        return ToolResult(f"error: tool {name} crashed: {type(exc).__name__}: {exc}", ok=False)


async def _run(tool: Tool, args: dict[str, Any], context: ToolContext, *, intercepted: bool) -> ToolResult:
    if intercepted:
        assert isinstance(tool, ApplyPatchTool)
        result = await tool.intercept_exec_command(args, context)
        assert result is not None
        return result
    return await tool.run(args, context)


def _described(content: list[dict[str, Any]]) -> str:
    """Content items as text for ``tool.completed`` (the item itself carries the data once)."""
    parts = []
    for part in content:
        kind = part.get("type")
        parts.append(str(part.get("text", "")) if kind == "input_text" else f"[{str(kind).removeprefix('input_')}]")
    return "\n".join(parts)


def _arguments(tool: Tool, call: dict[str, Any]) -> dict[str, Any]:
    if call.get("type") == "custom_tool_call":
        if tool.spec.freeform is None:
            raise ToolError(f"{tool.spec.name} takes JSON arguments, not freeform input")
        raw = call.get("input", "")
        return {"input": raw if isinstance(raw, str) else str(raw)}
    return check_arguments(parse_arguments(call.get("arguments", "")), tool.spec.parameters)


def _shell_patch(host: TurnHost, name: str, args: dict[str, Any]) -> ApplyPatchTool | None:
    """The apply_patch tool, when this ``exec_command`` runs ``apply_patch <<'EOF' ...``."""
    if name != "exec_command" or not isinstance(args.get("cmd"), str) or recognise_shell_patch(args["cmd"]) is None:
        return None
    patcher = host.tools.get("apply_patch")
    return patcher if isinstance(patcher, ApplyPatchTool) else None


def _summary(name: str, args: dict[str, Any]) -> str:
    """One line a person can approve or deny: the command, the files a patch touches."""
    if name == "exec_command" and isinstance(args.get("cmd"), str):
        return args["cmd"]
    if name == "apply_patch":
        text = args.get("input") if isinstance(args.get("input"), str) else ""
        cmd = args.get("cmd")
        if not text and isinstance(cmd, str):
            found = recognise_shell_patch(cmd)
            text = found.patch if found is not None else ""
        changes = [f"{verb} {line.strip()[len(marker):].strip()}" for line in text.splitlines() for marker, verb in _PATCH_MARKERS if line.strip().startswith(marker)]
        return "; ".join(changes) or "(no files)"
    return f"{name} {args}"[:500]


def _display_arguments(call: dict[str, Any]) -> Any:
    """Arguments for the tool.started event: parsed when they are JSON, raw text otherwise."""
    raw = call.get("input") if call.get("type") == "custom_tool_call" else call.get("arguments", "")
    try:
        return parse_arguments(raw)
    except ToolError:
        return raw
