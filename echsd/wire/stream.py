"""``EventStream``: a thread's events (or every thread's) as one gapless async iterator.

Theory of operation. The client's reader hands events to ``_deliver``, which only appends
(bounded: on overflow the queue is folded into one ``events.gap`` per thread, exactly like
the daemon's backpressure). The consumer's ``__anext__`` keeps a cursor per thread (the
last seq it yielded) and skips anything at or below it, so nothing is yielded twice. A
backpressure gap (the daemon's or ours) is filled by paging ``thread.events`` from the
cursor, so nothing is missed either; a retention gap (the log no longer has the events)
is yielded as is. After a connection loss the stream reconnects the client and subscribes
again from its cursor (``*``: live again, then every thread is re-read from its cursor), or,
with ``reconnect=False``, ends with ``WireError("connection_lost")``. A one-thread stream
ends after the thread's ``thread.deleted``.

A one-thread stream subscribes *live only* and reads everything up to the ``last_seq`` the
daemon answers from the log. Whatever reached the queue before (live events of an earlier
subscription on the same client, in flight while ours was made) has a seq at or below that
``last_seq``, so it can never overtake the log and push the cursor past unread events.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Protocol, Self

import trio

from echsd.events import gap_envelope
from echsd.seam import Seam
from echsd.wire.errors import ConnectionLost, WireError


class StreamClient(Protocol):
    """What a stream needs of its client (``echsd.wire.client.Client``)."""

    generation: int  # the connection the client is on now (bumped by each reconnect)

    @property
    def connected(self) -> bool: ...

    @property
    def closed(self) -> bool: ...

    async def reconnect(self) -> None: ...

    async def subscribe(self, thread_id: Any = None, since: Any = None, **params: Any) -> Any: ...

    async def unsubscribe(self, thread_id: Any = None, **params: Any) -> Any: ...

    async def list_threads(self, **params: Any) -> Any: ...

    async def thread_events(self, thread_id: Any, **params: Any) -> Any: ...

    def _forget_stream(self, stream: Any) -> None: ...

    def _forget_board_stream(self, stream: Any) -> None: ...

ALL = "*"
MAX_QUEUED = 100_000  # events held for a consumer that has not caught up
PAGE = 1000


def _span(event: dict[str, Any]) -> tuple[int, int]:
    if event.get("event") == "events.gap":
        data = event.get("data") or {}
        return int(data.get("from_seq", 0)), int(data.get("to_seq", 0))
    return int(event["seq"]), int(event["seq"])


class Subscribed:
    """What the client's event streams share: a wakeup for the consumer, and closing
    (unsubscribing if still connected; ``async with`` closes on exit)."""

    _client: StreamClient
    _generation: int | None  # the client connection the stream is subscribed on
    _closed: bool
    _wakeup: trio.Event

    def _wake(self) -> None:
        self._wakeup.set()

    def __aiter__(self) -> Self:
        return self

    def _forget(self) -> None:
        """Leave the client's table of streams."""
        raise NotImplementedError

    async def _unsubscribe(self) -> None:
        raise NotImplementedError

    async def aclose(self) -> None:
        """Stop the stream and unsubscribe (if still connected)."""
        if self._closed:
            return
        self._closed = True
        self._forget()
        self._wake()
        if self._generation is not None and self._generation == self._client.generation and self._client.connected:
            with trio.move_on_after(5.0):
                try:
                    await self._unsubscribe()
                except WireError:
                    pass

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        with trio.CancelScope(shield=True):
            await self.aclose()


class EventStream(Subscribed):
    def __init__(self, client: StreamClient, key: str, since: int, max_queued: int = MAX_QUEUED, reconnect: bool = True) -> None:
        self.key = key
        self._reconnect = reconnect
        self.since = since
        self._seam: Seam[str, Any] = Seam(default=since)  # per thread: the last seq yielded
        self._client = client
        self._max_queued = max_queued
        self._queue: deque[dict[str, Any]] = deque()
        self._ready: deque[dict[str, Any]] = deque()  # re-read from the log, to yield first
        self._refill: deque[tuple[str, int | None]] = deque()  # (thread, up to seq or None: all)
        self._wakeup = trio.Event()
        self._generation: int | None = None  # the client connection we are subscribed on
        self._closed = False
        self.deleted = False  # the thread was deleted: its thread.deleted was the last event

    # -- fed by the client's reader -------------------------------------------------------

    def _deliver(self, event: dict[str, Any]) -> None:
        if len(self._queue) >= self._max_queued:
            self._fold(event)
        else:
            self._queue.append(event)
        self._wake()

    def _fold(self, extra: dict[str, Any]) -> None:
        spans: dict[str, list[int]] = {}
        for event in (*self._queue, extra):
            first, last = _span(event)
            span = spans.setdefault(str(event.get("thread_id")), [first, last])
            span[0], span[1] = min(span[0], first), max(span[1], last)
        self._queue.clear()
        for thread_id, (first, last) in spans.items():
            self._queue.append(gap_envelope(thread_id, first, last, "backpressure"))

    # -- consumed -------------------------------------------------------------------------

    @property
    def cursor(self) -> dict[str, int]:
        """Per thread: the last seq yielded."""
        return self._seam.cursor

    def position(self, thread_id: str) -> int:
        return self._seam.position(thread_id)

    async def __anext__(self) -> dict[str, Any]:
        while True:
            if self._closed or self._client.closed or self.deleted:
                raise StopAsyncIteration
            if self._ready:
                return self._ready.popleft()
            try:
                if self._generation != self._client.generation or not self._client.connected:
                    await self._subscribe()
                    continue
                if self._refill:
                    await self._fill(*self._refill[0])
                    self._refill.popleft()
                    continue
            except ConnectionLost:
                continue
            if self._queue:
                event = self._accept(self._queue.popleft())
                if event is not None:
                    return event
                continue
            self._wakeup = trio.Event()
            await self._wakeup.wait()

    def _accept(self, event: dict[str, Any]) -> dict[str, Any] | None:
        """The event to yield (advancing the cursor), or None (duplicate, or a gap to fill)."""
        thread_id = str(event.get("thread_id"))
        first, last = _span(event)
        if last <= self.position(thread_id):
            return None
        if event.get("event") == "events.gap" and (event.get("data") or {}).get("reason") == "backpressure":
            self._refill.append((thread_id, last))
            return None
        self._seam.passes(thread_id, first, last)
        if event.get("event") == "thread.deleted" and thread_id == self.key:
            self.deleted = True  # nothing follows it (the daemon ended the subscription)
        return event

    async def _subscribe(self) -> None:
        client = self._client
        lost = self._generation is not None or not client.connected
        if lost and not self._reconnect:
            raise WireError("connection_lost", "the connection to the daemon was lost")
        if not client.connected:
            await client.reconnect()
        generation = client.generation
        if self.key != ALL:
            answer = await client.subscribe(self.key)  # live only: the log supplies the rest
            last = answer.get("last_seq")
            if last is not None and last > self.position(self.key):
                self._refill.appendleft((self.key, int(last)))
        elif self._generation is None:
            await client.subscribe(ALL, since=self.since)
        else:
            await client.subscribe(ALL)
            for thread in await client.list_threads():
                self._refill.append((thread["thread_id"], None))
        self._generation = generation

    async def _fill(self, thread_id: str, up_to: int | None) -> None:
        """Re-read the thread's log from the cursor (up to ``up_to``) into the ready queue."""
        while up_to is None or self.position(thread_id) < up_to:
            page = await self._client.thread_events(thread_id, since=self.position(thread_id), limit=PAGE)
            for event in page:
                accepted = self._accept(event)
                if accepted is not None:
                    self._ready.append(accepted)
            if not page:  # a page may be short of PAGE (the daemon's byte budget): only empty ends
                return

    # -- closing --------------------------------------------------------------------------

    def _forget(self) -> None:
        self._client._forget_stream(self)

    async def _unsubscribe(self) -> None:
        await self._client.unsubscribe(self.key)
