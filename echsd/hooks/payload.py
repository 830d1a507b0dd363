"""The JSON a hook receives for one event (sans-IO): the event's envelope, an ``id`` that
names the delivery (the same on every retry, so a receiver drops repeats), the thread's
context (name, parent, cwd, model) and ``summary``, one line a notification can show.

    {"id": "thr_…:42", "event": "turn.completed", "thread_id": "thr_…", "seq": 42,
     "ts": 1767225601.2, "data": {...}, "node": "build-1",
     "thread": {"name": null, "parent": null, "cwd": "/home/me/p", "model": "gpt-5.1"},
     "summary": "turn completed: All tests pass."}
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import orjson

from echsd.events import (
    ApprovalRequested,
    Event,
    RunFinished,
    SubagentCompleted,
    ThreadGivenUp,
    TurnCompleted,
    TurnError,
)

SUMMARY_CHARS = 200
ThreadContext = Callable[[str], "Mapping[str, Any] | None"]


def delivery_id(event: Event) -> str:
    """Stable for an event (a thread's seq is never reused): receivers dedupe on it."""
    return f"{event.thread_id}:{event.seq}"


def summary(event: Event) -> str:
    """One line saying what happened, for a notification."""
    data = event.data
    kind = event.type
    if kind == TurnCompleted.type_name:
        text = _line(TurnCompleted.of(data).final_text)
        return f"turn completed: {text}" if text else "turn completed"
    if kind == TurnError.type_name:
        error = TurnError.of(data).error
        message = error.get("message") if isinstance(error, dict) else error
        return f"turn failed: {_line(message)}"
    if kind == ApprovalRequested.type_name:
        asked = ApprovalRequested.of(data)
        return f"approval needed for {asked.tool}: {_line(asked.summary)}"
    if kind == RunFinished.type_name:
        run = RunFinished.of(data)
        return f"autonomous run finished after {run.turns} turn(s) ({run.reason})"
    if kind == SubagentCompleted.type_name:
        done = SubagentCompleted.of(data)
        text = _line(done.final_message)
        return f"sub-agent {done.agent_id} {done.status}" + (f": {text}" if text else "")
    if kind == ThreadGivenUp.type_name:
        return f"thread given up: {_line(ThreadGivenUp.of(data).reason)}"
    return kind


def payload(event: Event, node: str, context: Mapping[str, Any] | None) -> dict[str, Any]:
    return {
        "id": delivery_id(event),
        **event.envelope(),
        "node": node,
        "thread": dict(context) if context is not None else None,
        "summary": summary(event),
    }


def variables(document: Mapping[str, Any]) -> dict[str, str]:
    """The environment variables a hook command gets beside the JSON (a shell one-liner's
    needs: ``notify-send "$ECHS_EVENT" "$ECHS_SUMMARY"``)."""
    return {
        "ECHS_EVENT": str(document["event"]),
        "ECHS_THREAD_ID": str(document["thread_id"]),
        "ECHS_SEQ": str(document["seq"]),
        "ECHS_DELIVERY": str(document["id"]),
        "ECHS_SUMMARY": str(document["summary"]).replace("\x00", ""),
    }


def encode(document: Mapping[str, Any]) -> bytes:
    return orjson.dumps(document)


def _line(text: Any) -> str:
    flat = " ".join(str(text or "").split())
    return flat if len(flat) <= SUMMARY_CHARS else flat[: SUMMARY_CHARS - 1] + "…"
