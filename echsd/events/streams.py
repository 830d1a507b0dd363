"""Event types of streams rather than a thread's log: blackboard changes, gaps."""

from __future__ import annotations

from typing import Any

from echsd.events.base import EventData, doc, event


@event("blackboard.changed")
class BlackboardChanged(EventData):
    """A blackboard entry was written or deleted. Sent on `subscribe {blackboard: PREFIX}`:
    `thread_id` is null, `blackboard` names the subscription's prefix, and `seq` counts the
    blackboard's changes (its own seq space; a failed write may leave one unused)."""

    key: str = doc("str")
    value: Any = doc("the JSON value (null when deleted)")
    version: int = doc("int, the key's version after the change (never reused, also across a delete)")
    writer: Any = doc("the writing thread's id, or null for a client")
    updated_at: float = doc("unix float")
    deleted: bool = doc("bool")


@event("events.gap", stored=False)
class EventsGap(EventData):
    """Events in [from_seq, to_seq] were not delivered (slow client or retention); re-read
    them with thread.events or subscribe since=from_seq-1 (retained ones only). Its own seq
    is from_seq-1, the last seq delivered before the gap. On a blackboard subscription
    (`thread_id` null, `blackboard` set) the range is of blackboard seqs."""

    from_seq: int = doc("int")
    to_seq: int = doc("int")
    reason: Any = doc("backpressure | retention")
