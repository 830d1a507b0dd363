"""The event record shared by the store, the thread runtime and the wire.

An event is what happened on a thread, numbered by a per-thread ``seq`` (1, 2, 3, ...).
Events are written to the durable log first and only then published to live listeners,
so a client never sees an event that a crash could take back. Its ``type`` names one of the
event types of ``echsd.events`` (``EVENT_TYPES``), which say what its ``data`` holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from echsd.events.streams import EventsGap


@dataclass(slots=True, eq=True)
class Event:
    """Treat as immutable once emitted. Not ``frozen``: a frozen dataclass's ``__init__``
    costs 4x more, and replay builds hundreds of thousands of these per second."""

    thread_id: str
    seq: int
    type: str
    ts: float
    data: dict[str, Any] = field(default_factory=dict)

    def envelope(self) -> dict[str, Any]:
        """The wire form (CONTRACT.md 3.3)."""
        return {
            "event": self.type,
            "thread_id": self.thread_id,
            "seq": self.seq,
            "ts": self.ts,
            "data": self.data,
        }


@dataclass(frozen=True, slots=True)
class BoardStream:
    """The stream of one blackboard subscription, named by its key prefix: how the wire keys
    a connection's blackboard events (their own seq space) beside its threads' events."""

    prefix: str


StreamKey = str | BoardStream
"""A thread id, or a blackboard subscription: the streams a connection's events belong to."""


def gap_envelope(stream: StreamKey, from_seq: int, to_seq: int, reason: str, ts: float = 0.0) -> dict[str, Any]:
    """The ``events.gap`` event: seqs ``from_seq..to_seq`` of a thread (or of the blackboard,
    for a subscription to a prefix: ``thread_id`` null) were not delivered (CONTRACT.md 3.3).

    Its own seq is ``from_seq - 1``, the last seq delivered before the gap, so it sorts where
    the missing events would have been.
    """
    data = {"from_seq": from_seq, "to_seq": to_seq, "reason": reason}
    if isinstance(stream, BoardStream):
        return {"event": EventsGap.type_name, "thread_id": None, "blackboard": stream.prefix, "seq": from_seq - 1, "ts": ts, "data": data}
    return {"event": EventsGap.type_name, "thread_id": stream, "seq": from_seq - 1, "ts": ts, "data": data}
