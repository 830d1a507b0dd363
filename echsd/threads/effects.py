"""What the thread core hands back: decisions as plain values (sans-IO).

``ThreadCore`` methods never await and never touch IO; each returns ``Effects``: the events
and store statements of one atomic unit, and what the IO shell must do once the unit is
submitted (start a turn task, cancel a turn or a compaction, answer parked replies when a
turn has ended). The shell commits the unit first and acts second, so nothing a client
sees can be taken back by a crash.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from echsd.events import EventData
from echsd.store import Statement

USAGE_KEYS = ("input_tokens", "cached_tokens", "output_tokens", "reasoning_tokens")


def empty_usage() -> dict[str, Any]:
    """Token counts, and ``cost_usd`` estimated from the catalog's prices (0 where unknown)."""
    return {**{key: 0 for key in USAGE_KEYS}, "cost_usd": 0.0}


@dataclass(slots=True)
class TurnState:
    """The core's bookkeeping of the running turn (the shell owns its task and cancel scope)."""

    turn_id: str
    input_ids: list[str]
    end_reason: str | None = None  # set when the turn is ended from outside: interrupt | pause | kill | shutdown
    accepting_steer: bool = True
    usage: dict[str, Any] = field(default_factory=empty_usage)
    final_text: str = ""  # the last assistant message of this turn
    final_text_at: int = -1  # its position in the history
    autorun: bool = False  # a turn of an autonomous run (``autorun.py``)
    number: int = 0  # its number in the thread (1, 2, ...; ``turn`` of ``turn.started``)


@dataclass(frozen=True, slots=True)
class TurnEnd:
    """How a turn ended, as committed: for parked replies and the turn-finished callback."""

    turn_id: str
    status: str  # completed | interrupted | error
    reason: str | None  # for interrupted: interrupt | pause | kill | shutdown
    error: dict[str, str] | None  # for error: {code, message}
    final_text: str
    state: str  # the thread's state after the turn
    work: dict[str, Any] | None = None  # a worktree thread's branch and diff stat (``subagent.completed``)


@dataclass(frozen=True, slots=True)
class Park:
    """A control request's answer waits for the end of ``turn_id`` (``extra`` joins it)."""

    turn_id: str
    kind: str  # interrupt | pause | kill | shutdown
    extra: dict[str, Any] = field(default_factory=dict)

    def answer(self, thread_id: str, end: TurnEnd) -> dict[str, Any]:
        """The answer, once the turn has ended as ``end``."""
        result: dict[str, Any] = {
            "thread_id": thread_id,
            "turn_id": end.turn_id,
            "interrupted": end.status == "interrupted",
            "state": end.state,
        }
        if self.kind == "pause":
            result["paused"] = end.state == "paused"
        if self.kind == "kill":
            result["killed"] = end.state == "killed"
        return result | self.extra


@dataclass(slots=True)
class Effects:
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    statements: list[Statement] = field(default_factory=list)
    start_turn: TurnState | None = None  # spawn this turn's task
    cancel_turn: bool = False  # cancel the running turn's scope (its end_reason is set)
    cancel_compaction: bool = False  # cancel the running compaction (its result will be refused)
    turn_end: TurnEnd | None = None  # a turn ended in this unit

    def emit(self, kind: type[EventData], data: dict[str, Any]) -> None:
        """An event of ``kind`` (its class, ``echsd.events``) with ``data`` (its fields)."""
        self.events.append((kind.type_name, data))

    def merge(self, more: "Effects") -> None:
        """Append ``more``'s unit to this one (one atomic unit for both decisions)."""
        self.events.extend(more.events)
        self.statements.extend(more.statements)
        self.start_turn = self.start_turn or more.start_turn
        self.cancel_turn = self.cancel_turn or more.cancel_turn
        self.cancel_compaction = self.cancel_compaction or more.cancel_compaction
        self.turn_end = self.turn_end or more.turn_end
