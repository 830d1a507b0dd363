"""The protocol's view of a thread's turns (sans-IO): a turn with its finished items, the
thread's status, token usage. Built by ``translate.ThreadTranslator``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

USAGE_FIELDS = (
    ("inputTokens", "input_tokens"),
    ("cachedInputTokens", "cached_tokens"),
    ("outputTokens", "output_tokens"),
    ("reasoningOutputTokens", "reasoning_tokens"),
)


@dataclass
class Entry:
    """A finished item of a turn, with its times (``ThreadItemEntry``)."""

    item: dict[str, Any]
    started_ms: int
    completed_ms: int


@dataclass
class TurnView:
    id: str
    started_at: float
    seq: int = 0  # of its turn.started: where a replay of the turn begins
    cwd: str = ""  # the thread's cwd when it started
    status: str = "inProgress"
    completed_at: float | None = None
    error: dict[str, Any] | None = None
    entries: list[Entry] = field(default_factory=list)

    def to_turn(self, items_view: str = "full") -> dict[str, Any]:
        if items_view == "full":
            shown = [entry.item for entry in self.entries]
        elif items_view == "summary":
            last = next((e.item for e in reversed(self.entries) if e.item["type"] == "agentMessage"), None)
            shown = [last] if last is not None else []
        else:
            shown = []
        duration = None if self.completed_at is None else int((self.completed_at - self.started_at) * 1000)
        return {
            "id": self.id,
            "items": shown,
            "itemsView": items_view,
            "status": self.status,
            "error": self.error,
            "startedAt": int(self.started_at),
            "completedAt": None if self.completed_at is None else int(self.completed_at),
            "durationMs": duration,
        }


def status_object(state: str, waiting_on_approval: bool = False) -> dict[str, Any]:
    """echsd thread state -> ``ThreadStatus``."""
    if state == "running":
        return {"type": "active", "activeFlags": ["waitingOnApproval"] if waiting_on_approval else []}
    if state == "killed":
        return {"type": "systemError"}
    return {"type": "idle"}


def usage_breakdown(data: Mapping[str, Any]) -> dict[str, int]:
    breakdown = {name: int(data.get(key) or 0) for name, key in USAGE_FIELDS}
    breakdown["totalTokens"] = breakdown["inputTokens"] + breakdown["outputTokens"]
    return breakdown
