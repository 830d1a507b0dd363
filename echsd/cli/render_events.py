"""One line per event for ``echs events`` (``--json`` prints the envelopes instead)."""

from __future__ import annotations

import json
from typing import Any, Callable

from echsd.cli.render import Style, clock, one_line, printable
from echsd.cli.render_history import arguments_summary, content_text, output_text
from echsd.events import (
    EventData,
    EventsGap,
    ItemCompleted,
    StateChanged,
    ThreadCreated,
    ThreadDeleted,
    ThreadKilled,
    ToolCompleted,
    ToolOutput,
    ToolStarted,
    TurnCompleted,
    TurnDelta,
    TurnError,
    TurnInterrupted,
    TurnReasoningDelta,
)

TYPE_COLORS = {
    TurnCompleted.type_name: "green",
    TurnInterrupted.type_name: "yellow",
    TurnError.type_name: "red",
    ThreadKilled.type_name: "red",
    ThreadDeleted.type_name: "red",
    EventsGap.type_name: "magenta",
}


def _item(event: ItemCompleted, thread_id: str) -> str:
    item = event.item if isinstance(event.item, dict) else {}
    if item.get("type") == "message":
        return f"{item.get('role')}: {one_line(content_text(item), 100)}"
    if item.get("type") == "function_call":
        return f"function_call {item.get('name')}({arguments_summary(item.get('arguments'), 80)})"
    if item.get("type") == "custom_tool_call":
        return f"custom_tool_call {item.get('name')}: {one_line(str(item.get('input') or ''), 80)}"
    if item.get("type") in ("function_call_output", "custom_tool_call_output"):
        return f"{item.get('type')} {item.get('call_id')}: {one_line(output_text(item), 80)}"
    return str(item.get("type"))


def _error(event: TurnError, thread_id: str) -> str:
    error = event.error if isinstance(event.error, dict) else {}
    return f"{error.get('code')}: {one_line(str(error.get('message', '')), 100)}"


def _created(event: ThreadCreated, thread_id: str) -> str:
    thread = event.thread if isinstance(event.thread, dict) else {}
    return str((thread.get("config") or {}).get("model", ""))


def _tool_completed(event: ToolCompleted, thread_id: str) -> str:
    ok = "ok" if event.ok else "failed"
    return f"{event.name} {ok} in {float(event.duration_ms or 0):.0f}ms: {one_line(str(event.output or ''), 60)}"


# What each event type says, in a few words (read from its fields); others list their data.
SUMMARIES: dict[type[EventData], Callable[[Any, str], str]] = {
    TurnDelta: lambda e, _t: json.dumps(e.delta or "", ensure_ascii=False),
    TurnReasoningDelta: lambda e, _t: json.dumps(e.delta or "", ensure_ascii=False),
    ToolOutput: lambda e, _t: f"{e.call_id} {json.dumps(e.chunk or '', ensure_ascii=False)}",
    ItemCompleted: _item,
    ToolStarted: lambda e, _t: f"{e.name}({arguments_summary(e.arguments, 80)}) {e.call_id}",
    ToolCompleted: _tool_completed,
    TurnError: _error,
    TurnCompleted: lambda e, _t: f"{e.turn_id}: {one_line(str(e.final_text or ''), 80)}",
    EventsGap: lambda e, _t: f"events {e.from_seq}..{e.to_seq} not available ({e.reason})",
    ThreadKilled: lambda e, _t: killed_text(e.raw),
    ThreadDeleted: lambda e, thread_id: deleted_text(thread_id, e.raw),
    StateChanged: lambda e, _t: str(e.state) + (f" ({e.reason})" if e.reason else ""),
    ThreadCreated: _created,
}
_BY_NAME = {kind.type_name: (kind, summarise) for kind, summarise in SUMMARIES.items()}


def summary(event: dict[str, Any]) -> str:
    """What the event says, in a few words."""
    data = event.get("data") or {}
    found = _BY_NAME.get(str(event.get("event")))
    if found is None:
        return one_line(", ".join(f"{k}={_short(v)}" for k, v in data.items()), 120)
    kind, summarise = found
    return summarise(kind.of(data), str(event.get("thread_id")))


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
