"""One line per event for ``echs events`` (``--json`` prints the envelopes instead)."""

from __future__ import annotations

import json
from typing import Any

from echsd.cli.render import Style, clock, one_line, printable
from echsd.cli.render_history import arguments_summary, content_text, output_text

TYPE_COLORS = {
    "turn.completed": "green",
    "turn.interrupted": "yellow",
    "turn.error": "red",
    "thread.killed": "red",
    "thread.deleted": "red",
    "events.gap": "magenta",
}


def summary(event: dict[str, Any]) -> str:
    """What the event says, in a few words."""
    kind = event.get("event")
    data = event.get("data") or {}
    if kind in ("turn.delta", "turn.reasoning_delta"):
        return json.dumps(data.get("delta", ""), ensure_ascii=False)
    if kind == "tool.output":
        return f"{data.get('call_id')} {json.dumps(data.get('chunk', ''), ensure_ascii=False)}"
    if kind == "item.completed":
        item = data.get("item") or {}
        if item.get("type") == "message":
            return f"{item.get('role')}: {one_line(content_text(item), 100)}"
        if item.get("type") == "function_call":
            return f"function_call {item.get('name')}({arguments_summary(item.get('arguments'), 80)})"
        if item.get("type") == "custom_tool_call":
            return f"custom_tool_call {item.get('name')}: {one_line(str(item.get('input') or ''), 80)}"
        if item.get("type") in ("function_call_output", "custom_tool_call_output"):
            return f"{item.get('type')} {item.get('call_id')}: {one_line(output_text(item), 80)}"
        return str(item.get("type"))
    if kind == "tool.started":
        return f"{data.get('name')}({arguments_summary(data.get('arguments'), 80)}) {data.get('call_id')}"
    if kind == "tool.completed":
        ok = "ok" if data.get("ok") else "failed"
        return f"{data.get('name')} {ok} in {float(data.get('duration_ms') or 0):.0f}ms: {one_line(str(data.get('output', '')), 60)}"
    if kind == "turn.error":
        error = data.get("error") or {}
        return f"{error.get('code')}: {one_line(str(error.get('message', '')), 100)}"
    if kind == "turn.completed":
        return f"{data.get('turn_id')}: {one_line(str(data.get('final_text') or ''), 80)}"
    if kind == "events.gap":
        return f"events {data.get('from_seq')}..{data.get('to_seq')} not available ({data.get('reason')})"
    if kind == "thread.killed":
        return killed_text(data)
    if kind == "thread.deleted":
        return deleted_text(str(event.get("thread_id")), data)
    if kind == "thread.state":
        return str(data.get("state")) + (f" ({data['reason']})" if data.get("reason") else "")
    if kind == "thread.created":
        return str((data.get("thread") or {}).get("config", {}).get("model", ""))
    return one_line(", ".join(f"{k}={_short(v)}" for k, v in data.items()), 120)


def killed_text(data: dict[str, Any]) -> str:
    """``thread killed``, with the reason only when it says more (e.g. its parent's kill)."""
    reason = str(data.get("reason") or "")
    return "thread killed" if reason in ("", "kill", "killed", "thread killed") else f"thread killed: {reason}"


def deleted_text(thread_id: str, data: dict[str, Any]) -> str:
    """``thread deleted``, naming the ancestor whose deletion took it along."""
    root = data.get("root")
    return "thread deleted" if root in (None, thread_id) else f"thread deleted with its ancestor {root}"


def waiting_text(kind: str, data: dict[str, Any], left_s: float | None = None) -> str:
    """Why a turn is silent: a retried model request (``turn.retry``; ``left_s``: the
    countdown to show instead of its delay) or a wait for a slot (``turn.waiting``)."""
    if kind == "turn.retry":
        attempt, most = data.get("attempt"), data.get("max_retries")
        of = f"{attempt}/{most}" if most else str(attempt)
        delay = f"{round(float(data.get('delay_s') or 0), 2):g}s" if left_s is None else f"{left_s:.1f}s"
        return f"model request failed, retry {of} in {delay}: {one_line(str(data.get('reason') or data.get('code') or 'error'), 100)}"
    return f"waiting to run: {one_line(str(data.get('reason') or ''), 100)}"


def _short(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def event_line(event: dict[str, Any], style: Style) -> str:
    kind = str(event.get("event"))
    stamp = clock(float(event["ts"])) if event.get("ts") else "--:--:--"
    label = style(kind.ljust(20), fg=TYPE_COLORS.get(kind))
    return f"{style.dim(str(event.get('seq')).rjust(6))} {style.dim(stamp)} {label} {printable(summary(event))}"
