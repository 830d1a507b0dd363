"""Everything read from a tool call before it runs, in one pass (sans-IO).

A call's arguments are model output: they can be megabytes (a file written in one call, a
base64 blob in a shell word). ``prepare_call`` parses them once (JSON, the tool's schema,
an ``exec_command`` that is really ``apply_patch <<'EOF'``, the line an approver reads,
what the ``tool.started`` event shows) and is pure, so the tool runner can run it in a
worker thread when the arguments are large and the event loop stays free for every other
client. Arguments past the configured limit are not parsed at all: the call is answered
with an error saying so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

from echsd.tools.apply_patch import ApplyPatchTool
from echsd.tools.apply_patch.shell import ShellPatch, recognise_shell_patch
from echsd.tools.args import check_arguments, parse_arguments
from echsd.tools.base import Tool, ToolError

SUMMARY_CHANGES = 50  # files a patch's approval line names before "and more"
_PATCH_CHANGE = re.compile(r"^[ \t]*\*\*\* (Add File|Update File|Delete File|Move to):[ \t]*(.*?)[ \t\r]*$", re.MULTILINE)
_VERBS = {"Add File": "add", "Update File": "update", "Delete File": "delete", "Move to": "move to"}


@dataclass(frozen=True)
class PreparedCall:
    name: str  # the tool that runs (``apply_patch`` for an intercepted ``exec_command``)
    display: Any  # the arguments as the ``tool.started`` event shows them
    tool: Tool | None = None  # None: the call does not run, ``error`` is its output
    args: dict[str, Any] | None = None
    summary: str = ""  # one line to approve or deny
    shell_patch: ShellPatch | None = None  # an exec_command applied as a patch
    error: str | None = None


def raw_arguments(call: Mapping[str, Any]) -> Any:
    """The call's arguments as the model sent them (a freeform call's input)."""
    return call.get("input") if call.get("type") == "custom_tool_call" else call.get("arguments", "")


def argument_size(call: Mapping[str, Any]) -> int:
    """The arguments' size in UTF-8 bytes (no parsing: cheap enough for the event loop)."""
    raw = raw_arguments(call)
    if not isinstance(raw, str):
        return 0
    return len(raw) if raw.isascii() else len(raw.encode("utf-8", "surrogatepass"))


def too_large(call: Mapping[str, Any], limit: int) -> PreparedCall:
    size = argument_size(call)
    message = (
        f"error: this call's arguments are {size:,} bytes, over the limit of {limit:,} bytes "
        "([tuning] tool_argument_bytes); it did not run. Split the work into smaller calls "
        "(e.g. write a large file in several parts)."
    )
    return PreparedCall(str(call.get("name", "")), f"[{size:,} bytes of arguments, over the limit]", error=message)


def prepare_call(call: Mapping[str, Any], offered: Mapping[str, Tool], patcher: Tool | None) -> PreparedCall:
    """Parse and check ``call`` against the tools the thread offers; never raises."""
    name = str(call.get("name", ""))
    raw = raw_arguments(call)
    try:
        parsed: dict[str, Any] | None = parse_arguments(raw)
    except ToolError as exc:
        parsed, parse_error = None, exc
    display = raw if parsed is None else parsed
    tool = offered.get(name)
    if tool is None:
        available = ", ".join(offered) or "none"
        return PreparedCall(name, display, error=f"error: unknown tool {name!r}; available tools: {available}")
    if call.get("type") == "custom_tool_call":
        if tool.spec.freeform is None:
            return PreparedCall(name, display, error=f"error: {name} takes JSON arguments, not freeform input")
        args = {"input": raw if isinstance(raw, str) else str(raw)}
    elif parsed is None:
        return PreparedCall(name, display, error=f"error: {parse_error}")
    else:
        try:
            args = check_arguments(parsed, tool.spec.parameters)
        except ToolError as exc:
            return PreparedCall(name, display, error=f"error: {exc}")
    if name == "exec_command" and isinstance(patcher, ApplyPatchTool) and isinstance(args.get("cmd"), str):
        shell_patch = recognise_shell_patch(args["cmd"])
        if shell_patch is not None:
            return PreparedCall(patcher.spec.name, display, patcher, args, patch_summary(shell_patch.patch), shell_patch)
    return PreparedCall(name, display, tool, args, _summary(name, args))


def patch_summary(text: str) -> str:
    """The files a patch touches, as ``add a; update b`` (the first ``SUMMARY_CHANGES``)."""
    changes = []
    for found in _PATCH_CHANGE.finditer(text):
        if len(changes) == SUMMARY_CHANGES:
            changes.append("and more")
            break
        changes.append(f"{_VERBS[found.group(1)]} {found.group(2)}")
    return "; ".join(changes) or "(no files)"


def _summary(name: str, args: dict[str, Any]) -> str:
    """One line a person can approve or deny: the command, the files a patch touches."""
    if name == "exec_command" and isinstance(args.get("cmd"), str):
        return str(args["cmd"])
    if name == "apply_patch":
        return patch_summary(args["input"] if isinstance(args.get("input"), str) else "")
    return f"{name} {args}"[:500]
