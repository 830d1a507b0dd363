"""Run a response's tool calls and append one output item per call.

Calls run concurrently when every tool involved is parallel-safe, else one after another
in the model's order. Each output is appended (with ``tool.completed`` and
``item.completed``, in one store unit) as soon as its call finishes, so an interrupt keeps
every finished result. Whatever goes wrong inside a call (unknown tool, arguments that are
not JSON, a tool that raises or times out, a denied approval) becomes that call's output;
the loop goes on.

Before a call runs, ``callprep`` reads its arguments once (in a worker thread when they are
large; not at all past ``tool_argument_bytes``): a custom (freeform) call's raw input
becomes ``{"input": ...}``; an ``exec_command`` that is really ``apply_patch <<'EOF'`` is
applied as a patch (as Codex does). The thread's ``approval`` policy and rules may make it
wait for a client's answer or refuse it (``approval_rules.py``), and an ``exec_command``
with ``sandbox_permissions: "require_escalated"`` always waits (approved, it runs outside
the thread's sandbox, that once). After it
runs, text output is capped (head and tail kept, with a marker saying what was cut).
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any, Mapping

import trio

from echsd.approval_rules import ASK, REFUSE, decide, proposed_rule
from echsd.events import ToolCompleted, ToolStarted
from echsd.logs import get_logger
from echsd.threads.history import function_call_output
from echsd.threads.host import TurnHost
from echsd.threads.callprep import PreparedCall, argument_size, prepare_call, raw_arguments, too_large
from echsd.tools.apply_patch import ApplyPatchTool
from echsd.tools.apply_patch.shell import ShellPatch
from echsd.tools.base import Tool, ToolContext, ToolError, ToolResult
from echsd.tools.truncate import printable, truncate_middle

log = get_logger(__name__)

TIMEOUT_GRACE_S = 5.0  # the runtime's own limit, past the tool's (tools enforce theirs first)
MAX_OUTPUT_TOKENS = 16_000  # the cap on any one call's output the model reads
CHARS_PER_TOKEN = 4  # the estimate Codex uses
OFF_LOOP_ARGUMENT_CHARS = 64 * 1024  # larger arguments are parsed in a worker thread
NOT_APPROVED = {
    "deny": "a user denied this call",
    "timeout": "nobody answered the approval request in time, so it was denied",
}
NOT_ESCALATED = {
    "deny": "a user refused to run this command outside the sandbox (the thread's sandbox still applies: work within it, or ask the user)",
    "timeout": "nobody answered the request to run this command outside the sandbox in time, so it was refused",
}


def escalates(name: str, args: dict[str, Any], context: ToolContext) -> bool:
    """An ``exec_command`` asking to run outside a sandbox that confines it: it waits for a
    person's yes whatever the thread's approval policy."""
    confined = context.sandbox is not None and context.sandbox.confined
    return confined and name == "exec_command" and args.get("sandbox_permissions") == "require_escalated"


async def run_tool_calls(host: TurnHost, calls: list[dict[str, Any]], repeated: Mapping[str, str] | None = None) -> None:
    """``repeated``: calls renamed because they repeated an earlier call's id (the id they
    repeated, by their new one): answered with an error, never run."""
    tools = [host.tools.get(str(call.get("name", ""))) for call in calls]
    repeated = repeated or {}
    if len(calls) > 1 and all(tool is None or tool.spec.parallel_safe for tool in tools):
        async with trio.open_nursery() as nursery:
            for call in calls:
                nursery.start_soon(_run_one, host, call, repeated)
    else:
        for call in calls:
            await _run_one(host, call, repeated)


async def _run_one(host: TurnHost, call: dict[str, Any], repeated: Mapping[str, str]) -> None:
    name = str(call.get("name", ""))
    call_id = str(call.get("call_id", ""))
    turn_id = host.turn_id
    if call_id in repeated:
        refusal = (
            f"error: this call repeated the call_id {repeated[call_id]!r} of an earlier call in the same response, so it "
            f"did not run; it is listed as {call_id!r}. Give every call its own call_id."
        )
        prepared = PreparedCall(name, raw_arguments(call), error=refusal)
    else:
        prepared = await _prepare(host, call)
    await host.emit(ToolStarted, {"turn_id": turn_id, "call_id": call_id, "name": name, "arguments": prepared.display})
    started = time.monotonic()
    host.activity.tool_started(name, call_id)
    try:
        result = await _invoke(host, prepared, call_id)
    finally:
        host.activity.tool_ended(call_id)
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
    await host.append_items([output_item], before=[(ToolCompleted, completed)])


async def _prepare(host: TurnHost, call: dict[str, Any]) -> PreparedCall:
    """Parse the call's arguments: over the limit not at all, large ones off the event loop."""
    size = argument_size(call)
    if size > host.tuning.tool_argument_bytes:
        return too_large(call, host.tuning.tool_argument_bytes)
    offered = {tool.spec.name: tool for tool in host.tools.offered(host.config.tools, host.config.mcp)}
    patcher = host.tools.get("apply_patch")
    if size <= OFF_LOOP_ARGUMENT_CHARS:
        return prepare_call(call, offered, patcher)
    return await trio.to_thread.run_sync(prepare_call, call, offered, patcher)


async def _invoke(host: TurnHost, prepared: PreparedCall, call_id: str) -> ToolResult:
    tool, name, args = prepared.tool, prepared.name, prepared.args
    if prepared.error is not None or tool is None or args is None:
        return ToolResult(prepared.error or "error: the call could not be prepared", ok=False)
    context = host.tool_context(call_id)
    try:
        escalated = escalates(name, args, context)
        verdict = decide(host.config.approval, name=name, writes=tool.spec.writes, args=args, escalated=escalated, rules=host.approval_rules)
        if verdict.verdict == REFUSE:
            return ToolResult(f"error: {verdict.explain()}; the call did not run", ok=False, meta={"approval": "refused"})
        if verdict.verdict == ASK:
            summary = ("outside the sandbox: " if escalated else "") + prepared.summary
            decision = await host.request_approval(call_id, name, args, summary, proposed_rule(name, args))
            if decision != "approve":
                refused = NOT_ESCALATED if escalated else NOT_APPROVED
                what = "command" if escalated else "call"
                return ToolResult(f"error: {refused.get(decision, decision)}; the {what} did not run", ok=False, meta={"approval": decision})
        if escalated:
            context = replace(context, sandbox=None)  # approved (or allowed by a rule): this one command runs unconfined
        with trio.move_on_after(context.timeout_s + TIMEOUT_GRACE_S):
            return await _run(tool, args, context, prepared.shell_patch)
        return ToolResult(f"error: tool {name} timed out after {context.timeout_s:g} s", ok=False)
    except ToolError as exc:
        return ToolResult(f"error: {exc}", ok=False, meta=exc.meta)
    except Exception as exc:
        log.exception("tool crashed", thread_id=host.thread_id, tool=name, call_id=call_id)
        return ToolResult(f"error: tool {name} crashed: {type(exc).__name__}: {exc}", ok=False)


async def _run(tool: Tool, args: dict[str, Any], context: ToolContext, shell_patch: ShellPatch | None) -> ToolResult:
    if shell_patch is not None:
        assert isinstance(tool, ApplyPatchTool)
        result = await tool.intercept_exec_command(args, context, shell_patch)
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
