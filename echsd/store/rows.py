"""Row types shared by the statement builders (ops) and the queries, and JSON coding.

JSON columns hold orjson output: TEXT for state columns (readable with the sqlite3 shell),
BLOB bytes for event data (the hot path; no decode/encode round trip to str).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from echsd.events import Event, gap_envelope


def dumps_text(value: Any) -> str:
    return orjson.dumps(value).decode()


def loads(value: str | bytes | None, default: Any = None) -> Any:
    if value is None:
        return default
    return orjson.loads(value)


@dataclass(slots=True)
class ThreadRow:
    thread_id: str
    parent: str | None
    created_at: float
    state: str
    config: dict[str, Any] = field(default_factory=dict)
    usage: dict[str, Any] = field(default_factory=dict)
    active_turn: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    updated_at: float = 0.0


@dataclass(slots=True)
class InputRow:
    input_id: str
    thread_id: str
    client_msg_id: str | None
    mode: str
    text: str
    attachments: list[Any] = field(default_factory=list)
    status: str = "queued"  # queued | steering | delivered | dropped
    position: int = 0
    created_at: float = 0.0
    turn_id: str | None = None
    reason: str | None = None
    disposition: str | None = None  # the acknowledgement's: started | queued | steered


@dataclass(frozen=True, slots=True)
class Gap:
    """Seqs ``from_seq..to_seq`` (inclusive) of ``thread_id`` are gone (e.g. retention)."""

    thread_id: str
    from_seq: int
    to_seq: int
    reason: str

    def envelope(self, ts: float = 0.0) -> dict[str, Any]:
        """The ``events.gap`` event a client gets in place of the missing range."""
        return gap_envelope(self.thread_id, self.from_seq, self.to_seq, self.reason, ts)


@dataclass(frozen=True, slots=True)
class BlackboardRow:
    """A blackboard entry; ``deleted``: a tombstone (``value`` None), kept so that the key's
    version goes on from where it was when the key is written again."""

    key: str
    value: Any
    version: int
    writer: str | None
    updated_at: float
    deleted: bool = False


@dataclass(frozen=True, slots=True)
class BlackboardChange:
    """One logged change of the blackboard: its seq (the blackboard's own seq space) and
    the entry as the change left it."""

    seq: int
    entry: BlackboardRow


def thread_from_row(r: tuple[Any, ...]) -> ThreadRow:
    return ThreadRow(
        thread_id=r[0],
        parent=r[1],
        created_at=r[2],
        state=r[3],
        config=loads(r[4], {}),
        usage=loads(r[5], {}),
        active_turn=r[6],
        extra=loads(r[7], {}),
        updated_at=r[8],
    )


def input_from_row(r: tuple[Any, ...]) -> InputRow:
    return InputRow(
        input_id=r[0],
        thread_id=r[1],
        client_msg_id=r[2],
        mode=r[3],
        text=r[4],
        attachments=loads(r[5], []),
        status=r[6],
        position=r[7],
        created_at=r[8],
        turn_id=r[9],
        reason=r[10],
        disposition=r[11],
    )


def event_from_row(r: tuple[Any, ...]) -> Event:
    return Event(r[0], r[1], r[2], r[3], orjson.loads(r[4]))  # positional: the replay hot path


THREAD_COLUMNS = (
    "thread_id, parent, created_at, state, config, usage, active_turn, extra, updated_at"
)
INPUT_COLUMNS = (
    "input_id, thread_id, client_msg_id, mode, text, attachments, status, position, "
    "created_at, turn_id, reason, disposition"
)
EVENT_COLUMNS = "thread_id, seq, type, ts, data"
