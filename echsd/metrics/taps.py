"""Committed events into counters: what happened on this node's threads.

``event_taps`` maps event types to small functions; the daemon calls the one for each
committed event of its own threads (``EventTaps``), so a type nobody taps (every streamed
delta) costs one dict lookup. No label carries a thread, turn or call id.
"""

from __future__ import annotations

from typing import Callable

from echsd.events import (
    ApprovalRequested,
    ApprovalResolved,
    Event,
    EventData,
    SubagentCompleted,
    ToolCompleted,
    TurnCompleted,
    TurnError,
    TurnInterrupted,
    TurnRetry,
    TurnStarted,
    TurnUsage,
)
from echsd.metrics.families import DaemonMetrics

USAGE_KINDS = ("input", "cached", "output", "reasoning")
Tap = Callable[[Event], None]


def event_taps(metrics: DaemonMetrics, model_of: Callable[[str], str | None]) -> dict[type[EventData], Tap]:
    """``model_of(thread_id)``: the thread's model now (labels tokens and cost)."""

    def word(value: object) -> str:
        return metrics.reason(_snake(value))

    def started(event: Event) -> None:
        metrics.turns_started.inc()

    def completed(event: Event) -> None:
        metrics.turns_finished.inc("completed")

    def interrupted(event: Event) -> None:
        metrics.turns_finished.inc("interrupted")
        metrics.turns_interrupted.inc(word(TurnInterrupted.of(event.data).reason))

    def errored(event: Event) -> None:
        metrics.turns_finished.inc("error")
        error = TurnError.of(event.data).error
        metrics.turn_errors.inc(word(error.get("code") if isinstance(error, dict) else None))

    def usage(event: Event) -> None:
        model = metrics.model(model_of(event.thread_id))
        used = TurnUsage.of(event.data)
        for kind, count in zip(USAGE_KINDS, (used.input_tokens, used.cached_tokens, used.output_tokens, used.reasoning_tokens)):
            if isinstance(count, int) and count > 0:
                metrics.tokens.inc(model, kind, amount=count)
        if isinstance(used.cost_usd, (int, float)) and used.cost_usd > 0:
            metrics.cost.inc(model, amount=used.cost_usd)

    def tool(event: Event) -> None:
        done = ToolCompleted.of(event.data)
        name = metrics.tool(done.name)
        outcome = "denied" if done.raw.get("approval") in ("deny", "timeout") else "ok" if done.ok else "error"
        metrics.tool_calls.inc(name, outcome)
        if isinstance(done.sandbox_denied, str):
            metrics.sandbox_denials.inc(name, word(done.sandbox_denied))
        if isinstance(done.duration_ms, (int, float)):
            metrics.tool_seconds.observe(name, value=done.duration_ms / 1000)

    def retry(event: Event) -> None:
        metrics.retries.inc(word(TurnRetry.of(event.data).code))

    def asked(event: Event) -> None:
        metrics.approvals_requested.inc()

    def resolved(event: Event) -> None:
        metrics.approvals_resolved.inc(word(ApprovalResolved.of(event.data).decision))

    def subagent(event: Event) -> None:
        metrics.subagents.inc(word(SubagentCompleted.of(event.data).status))

    return {
        TurnStarted: started,
        TurnCompleted: completed,
        TurnInterrupted: interrupted,
        TurnError: errored,
        TurnUsage: usage,
        ToolCompleted: tool,
        TurnRetry: retry,
        ApprovalRequested: asked,
        ApprovalResolved: resolved,
        SubagentCompleted: subagent,
    }


def _snake(value: object) -> str:
    """A code or reason as a label value: a short snake_case word."""
    text = str(value or "unknown").lower()[:40]
    return "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in text) or "unknown"
