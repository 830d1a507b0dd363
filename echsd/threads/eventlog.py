"""A thread's side of the durable event log: assigns ``seq`` and builds store units.

Order is the whole point. ``seq`` numbers are assigned and units handed to the store writer
in one synchronous step, so submission order == seq order == commit order, and a crash can
only lose a suffix that no client has seen (events are published after commit). Callers
``await ready()`` first (the writer's backpressure), then decide, mutate and ``emit``
without awaiting in between, so the events of one decision are never interleaved with
another's.
"""

from __future__ import annotations

import time
from typing import Any, Iterable, Sequence

from echsd.events import DELTA_EVENTS, Event, EventData
from echsd.store import Statement, StoreWriter, Unit


class ThreadLog:
    def __init__(self, thread_id: str, writer: StoreWriter, last_seq: int) -> None:
        self.thread_id = thread_id
        self.writer = writer
        self.last_seq = last_seq
        self.last_at: float | None = None  # unix time of the last event logged here (``waiting_on``)
        self.deltas_since_fold = 0  # delta events logged since retention last ran
        self.delta_chars_since_fold = 0  # ... and their text's length

    async def ready(self) -> None:
        """Wait until the writer can take a unit without blocking."""
        await self.writer.wait_room()

    def emit(
        self,
        events: Sequence[tuple[str, dict[str, Any]]] = (),
        statements: Iterable[Statement] = (),
    ) -> Unit:
        """Write ``statements`` and append ``events`` atomically; returns the unit to ``wait()`` on."""
        now = time.time()
        built = []
        deltas = 0
        seq = self.last_seq
        for event_type, data in events:
            seq += 1
            built.append(Event(self.thread_id, seq, event_type, now, data))
            if event_type in DELTA_EVENTS:
                deltas += 1
                self.delta_chars_since_fold += _delta_size(data)
        unit = Unit(events=built, statements=list(statements), fence=self.thread_id)
        self.writer.put_nowait(unit)  # raises before any seq is taken if the writer is full
        self.last_seq = seq
        if built:
            self.last_at = now
        self.deltas_since_fold += deltas
        return unit

    def emit_one(self, kind: type[EventData], data: dict[str, Any], *statements: Statement) -> Unit:
        """The hot path (every delta): one event, no intermediate lists."""
        seq = self.last_seq + 1
        now = time.time()
        unit = Unit(events=[Event(self.thread_id, seq, kind.type_name, now, data)], statements=list(statements), fence=self.thread_id)
        self.writer.put_nowait(unit)
        self.last_seq = seq
        self.last_at = now
        if kind.streamed:
            self.deltas_since_fold += 1
            self.delta_chars_since_fold += _delta_size(data)
        return unit

    def fold_due(self, every_deltas: int, every_chars: int) -> bool:
        """Whether retention should run (and, if so, start counting again)."""
        if self.deltas_since_fold < every_deltas and self.delta_chars_since_fold < every_chars:
            return False
        self.deltas_since_fold = self.delta_chars_since_fold = 0
        return True


def _delta_size(data: dict[str, Any]) -> int:
    text = data.get("delta") or data.get("chunk")
    return len(text) if isinstance(text, str) else 0
