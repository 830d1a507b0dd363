"""One connection's outbound queue with backpressure accounting, sans-IO.

Theory of operation. The event hub calls us synchronously after each store commit, so
``push_event`` must never block: it appends and returns. The connection's writer task
calls ``take`` whenever something is pending, sends the frames it gets, and calls
``take`` again; a ``take`` therefore means "the writer has drained what it took before".

- Responses are never dropped. The request loop bounds them by waiting while
  ``response_bytes`` (or ``responses``) is too high: both count responses until the
  writer has sent them (``sent``), not only until it took them, so a client that reads
  nothing holds at most one budget of answers, whatever it asks for.
- Events are bounded by ``max_events`` and ``max_event_bytes`` while the writer is busy
  sending, i.e. while the client is behind. While the writer is idle, a burst up to
  ``BURST_FACTOR`` times the count (``BYTES_BURST_FACTOR`` times the bytes) is accepted:
  the store publishes a whole commit batch (often more than 10,000 events) in one
  synchronous call before the writer can run, and that alone says nothing about the
  client's speed. On overflow every queued event is dropped and its seq range
  remembered per thread; further events of those threads are dropped too (the range
  grows) until the next ``take``, which emits one ``events.gap`` per thread with
  ``reason: "backpressure"`` (envelope ``seq`` = ``from_seq - 1``) and resumes live
  delivery. So a client that reads nothing costs bounded memory and never slows a thread.
- ``take`` puts every run of consecutive events into one frame (the plain event for one,
  ``{"events": [...]}`` for several; for the web view's Server-Sent Events, the events one
  after another: ``encoding``), split only past ``max_frame_bytes``; each response is its
  own frame; order is kept.

An item may carry several encoded events of one thread with contiguous seqs (a page of a
replay, concatenated): it is counted, dropped and batched as that many events.
"""

from __future__ import annotations

import weakref
from collections import deque

from echsd.events import StreamKey, gap_envelope
from echsd.wire.encoding import MSGPACK, Encoding

DEFAULT_MAX_FRAME_BYTES = 4 * 1024 * 1024
DEFAULT_MAX_EVENT_BYTES = 32 * 1024 * 1024
BURST_FACTOR = 8
BYTES_BURST_FACTOR = 2


class Item:
    """Queued output: a response (``count == 0``), or a run of one stream's encoded events
    (a thread's, with contiguous seqs: consecutive pushes are merged into one run, so a
    streaming thread costs one list append per event; or a blackboard subscription's)."""

    __slots__ = ("thread_id", "first_seq", "last_seq", "ts", "parts", "count", "size")

    def __init__(self, thread_id: StreamKey | None, first_seq: int, last_seq: int, ts: float, data: bytes, count: int) -> None:
        self.thread_id = thread_id
        self.first_seq = first_seq  # of the first event (a stored gap: its from_seq)
        self.last_seq = last_seq  # of the last event (a stored gap: its to_seq)
        self.ts = ts
        self.parts = [data]  # encoded events, concatenated in order
        self.count = count
        self.size = len(data)


class OutboxTally:
    """Every outbox of a daemon, for its metrics: their backlogs now, and the events they
    dropped and gaps they sent since the start (also of connections gone)."""

    def __init__(self) -> None:
        self.outboxes: weakref.WeakSet[Outbox] = weakref.WeakSet()
        self.dropped = 0
        self.gaps = 0

    def backlog(self) -> tuple[int, int]:
        """(events, bytes) queued now, over every live outbox."""
        boxes = list(self.outboxes)
        return sum(box.events for box in boxes), sum(box.event_bytes for box in boxes)


class Outbox:
    def __init__(
        self,
        max_events: int,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
        *,
        tally: OutboxTally | None = None,
        encoding: Encoding = MSGPACK,
    ) -> None:
        self.encoding = encoding  # how its events are written (and batched into frames)
        self.max_events = max(1, max_events)
        self.max_event_bytes = max(1, max_event_bytes)
        self.max_frame_bytes = max_frame_bytes
        self.events = 0  # events queued
        self.event_bytes = 0  # their encoded size
        self.responses = 0  # responses queued or taken and not yet sent
        self.response_bytes = 0  # their encoded size
        self._taken = (0, 0)  # (responses, bytes) handed out by the last take, until sent()
        self.dropped = 0  # events dropped over the connection's life
        self.gaps = 0  # backpressure gaps emitted
        self.writer_idle = True  # set by the IO shell: False from a take until the writer waits again
        self._items: deque[Item] = deque()
        self._dropping: dict[StreamKey, list[float]] = {}  # stream -> [from_seq, to_seq, ts]
        self._tally = tally
        if tally is not None:
            tally.outboxes.add(self)

    def __bool__(self) -> bool:
        """Whether ``take`` has something to hand out."""
        return bool(self._items or self._dropping)

    def push_response(self, data: bytes) -> None:
        self._items.append(Item(None, 0, 0, 0.0, data, 0))
        self.responses += 1
        self.response_bytes += len(data)

    def push_event(self, thread_id: StreamKey, first_seq: int, last_seq: int, ts: float, data: bytes, count: int = 1) -> bool:
        """Queue encoded event(s) of one stream (a thread, or a blackboard subscription);
        False when dropped (they will be in a gap)."""
        if self._dropping and thread_id in self._dropping:
            self.drop(thread_id, first_seq, last_seq, ts, count)
            return False
        idle = self.writer_idle
        if self.events + count > (self.max_events * BURST_FACTOR if idle else self.max_events) or (
            self.event_bytes + len(data) > (self.max_event_bytes * BYTES_BURST_FACTOR if idle else self.max_event_bytes) and self.events
        ):
            self._overflow()
            self.drop(thread_id, first_seq, last_seq, ts, count)
            return False
        self.events += count
        self.event_bytes += len(data)
        items = self._items
        if items:
            run = items[-1]
            if run.thread_id == thread_id and run.last_seq + 1 == first_seq and run.size + len(data) <= self.max_frame_bytes:
                run.parts.append(data)
                run.last_seq, run.ts = last_seq, ts
                run.count += count
                run.size += len(data)
                return True
        items.append(Item(thread_id, first_seq, last_seq, ts, data, count))
        return True

    def forget(self, thread_id: StreamKey | None = None) -> None:
        """Drop the pending gap of one stream (or of every thread): a re-subscription supersedes it."""
        if thread_id is None:
            for stream in [key for key in self._dropping if isinstance(key, str)]:
                del self._dropping[stream]
        else:
            self._dropping.pop(thread_id, None)

    def take(self) -> list[bytes]:
        """Everything pending as frames, in order; ends the dropping period (see module doc)."""
        frames: list[bytes] = []
        parts: list[bytes] = []
        count = size = 0
        limit = self.max_frame_bytes
        batch, encode = self.encoding.batch, self.encoding.envelope
        gaps = [
            Item(tid, int(first), int(last), ts, encode(gap_envelope(tid, int(first), int(last), "backpressure", ts)), 1)
            for tid, (first, last, ts) in self._dropping.items()
        ]
        self.gaps += len(gaps)
        if gaps and self._tally is not None:
            self._tally.gaps += len(gaps)
        self._dropping.clear()
        for item in (*gaps, *self._items):
            if not item.count:
                if parts:
                    frames.append(batch(parts, count))
                    parts, count, size = [], 0, 0
                frames.append(item.parts[0])
                continue
            if parts and size + item.size > limit:
                frames.append(batch(parts, count))
                parts, count, size = [], 0, 0
            parts.extend(item.parts)
            count += item.count
            size += item.size
        if parts:
            frames.append(batch(parts, count))
        self._items.clear()
        self.events = self.event_bytes = 0
        self._taken = (self.responses, self.response_bytes)
        return frames

    def sent(self) -> None:
        """The writer has sent every frame of its last ``take``."""
        responses, size = self._taken
        self.responses -= responses
        self.response_bytes -= size
        self._taken = (0, 0)

    def _overflow(self) -> None:
        kept: deque[Item] = deque()
        for item in self._items:
            if item.count:
                self.drop(item.thread_id, item.first_seq, item.last_seq, item.ts, item.count)  # type: ignore[arg-type]
            else:
                kept.append(item)
        self._items = kept
        self.events = self.event_bytes = 0

    def drop(self, thread_id: StreamKey, first_seq: int, last_seq: int, ts: float, count: int = 1) -> None:
        """Count events as not delivered: they will be reported in the stream's next gap."""
        self.dropped += count
        if self._tally is not None:
            self._tally.dropped += count
        span = self._dropping.get(thread_id)
        if span is None:
            self._dropping[thread_id] = [first_seq, last_seq, ts]
        else:
            span[0] = min(span[0], first_seq)
            span[1] = max(span[1], last_seq)
            span[2] = max(span[2], ts)

