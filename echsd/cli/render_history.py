"""Responses items (a thread's history) as readable text: roles, tool calls with their
arguments, tool outputs truncated. ``--json`` prints the items themselves instead."""

from __future__ import annotations

import json
from typing import Any

from echsd.cli.render import Style, clip_lines, head_and_tail, one_line, printable
from echsd.done_marker import split_done


def content_text(item: dict[str, Any]) -> str:
    """The text of a message or reasoning item (its parts joined)."""
    parts = item.get("content") if item.get("type") == "message" else item.get("summary")
    if isinstance(parts, str):
        return parts
    texts = []
    for part in parts or []:
        if isinstance(part, dict):
            text = part.get("text") or part.get("refusal")
            texts.append(str(text) if text is not None else f"[{part.get('type', 'part')}]")
    return "\n".join(texts)


def output_text(item: dict[str, Any]) -> str:
    """A function_call_output's output, whether a string or a list of content parts."""
    output = item.get("output")
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "\n".join(str(p.get("text", f"[{p.get('type', 'part')}]")) if isinstance(p, dict) else str(p) for p in output)
    return json.dumps(output, ensure_ascii=False)


def call_text(item: dict[str, Any]) -> str | None:
    """The text a call carries as a whole (a patch: a freeform call's ``input``, or the
    ``input`` argument of apply_patch as a function), or None for ordinary arguments."""
    if item.get("type") == "custom_tool_call":
        return str(item.get("input") or "")
    if item.get("name") != "apply_patch":
        return None
    arguments = item.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return arguments
    if isinstance(arguments, dict) and isinstance(arguments.get("input"), str):
        return str(arguments["input"])
    return None


def arguments_summary(arguments: Any, limit: int = 100) -> str:
    """Tool call arguments on one line: ``cmd="ls -la", yield_time_ms=500``."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return one_line(arguments, limit)
    if isinstance(arguments, dict):
        text = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in arguments.items())
        return one_line(text, limit)
    return one_line(json.dumps(arguments, ensure_ascii=False), limit)


def item_lines(item: dict[str, Any], style: Style, *, max_lines: int = 12) -> list[str]:
    kind = item.get("type")
    if kind == "message":
        role = str(item.get("role", "?"))
        color = {"user": "cyan", "assistant": "green"}.get(role, "magenta")
        text = content_text(item)
        body = printable(split_done(text)[0] if role == "assistant" else text).splitlines() or [""]
        return [style(f"{role} ›", fg=color, bold=True), *(f"  {line}" for line in body)]
    if kind == "reasoning":
        text = content_text(item)
        if not text:
            return [style.dim("reasoning ›  (no summary)")]
        return [style.dim("reasoning ›"), *(style.dim(f"  {line}") for line in printable(text).splitlines())]
    if kind in ("function_call", "custom_tool_call"):
        name = one_line(str(item.get("name")), 80)
        text = call_text(item)
        if text is None:
            call = f"{name}({arguments_summary(item.get('arguments'))})"
            return [style("call ›", fg="yellow", bold=True) + f" {call}" + style.dim(f"  [{item.get('call_id')}]")]
        header = style("call ›", fg="yellow", bold=True) + f" {name}" + style.dim(f"  [{item.get('call_id')}]")
        return [header, *(f"  {line}" for line in head_and_tail(text))]
    if kind in ("function_call_output", "custom_tool_call_output"):
        lines = clip_lines(output_text(item), max_lines=max_lines)
        return [style("output ›", fg="yellow") + style.dim(f"  [{item.get('call_id')}]"), *(f"  {line}" for line in lines)]
    if kind == "compaction":
        return [style.dim("(earlier context compacted)")]
    return [style.dim(f"{kind} ›") + " " + one_line(json.dumps(item, ensure_ascii=False), 120)]


def history_lines(items: list[dict[str, Any]], style: Style) -> list[str]:
    if not items:
        return ["(empty history)"]
    lines: list[str] = []
    for item in items:
        lines.extend(item_lines(item, style))
    return lines
