"""``BoardEventStream``: the blackboard's changes under a prefix as one gapless async iterator.

Theory of operation. The client's reader hands the subscription's events (those whose
``blackboard`` field names our prefix) to ``_deliver``, which only appends. The consumer's
``__anext__`` keeps a cursor (the last seq yielded) and skips anything at or below it, so
nothing is yielded twice. When the stream must start over from its cursor (a backpressure
gap from the daemon, our own queue full, a new connection after a loss) it first yields
what it holds from before the break, drops everything after it, then subscribes again with
``since = cursor``: the daemon replays its log from there and goes live, with no gap at
its seam. On the same connection it first unsubscribes and waits for that answer: the
daemon answers in order, so every event of the old subscription has arrived by then and
is dropped, and nothing of it can overtake the replay. Each restart yields at least what
the queue held, so a slow consumer always gets on. A retention gap (the log no longer has
those changes) is yielded as is.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import trio

from echsd.wire.errors import ConnectionLost, WireError
from echsd.wire.stream import StreamClient, Subscribed

MAX_QUEUED = 100_000


class BoardEventStream(Subscribed):
    def __init__(self, client: StreamClient, prefix: str, since: int | None, max_queued: int = MAX_QUEUED, reconnect: bool = True) -> None:
        self.prefix = prefix
        self.cursor = since  # the last seq yielded; None: not subscribed yet, live only
        self._client = client
        self._max_queued = max_queued
        self._reconnect = reconnect
        self._queue: deque[dict[str, Any]] = deque()
        self._restart = False  # subscribe again from the cursor (a gap, or our queue overflowed)
        self._wakeup = trio.Event()
        self._generation: int | None = None  # the client connection we are subscribed on
        self._closed = False

    # -- fed by the client's reader -------------------------------------------------------

    def _deliver(self, event: dict[str, Any]) -> None:
        if self._restart:
            return  # after a break: the replay from the cursor brings it again
        if len(self._queue) >= self._max_queued:
            self._restart = True  # re-read from the daemon's log once the consumer gets there
        else:
            self._queue.append(event)
        self._wake()

    # -- consumed -------------------------------------------------------------------------

    async def __anext__(self) -> dict[str, Any]:
        while True:
            if self._closed or self._client.closed:
                raise StopAsyncIteration
            if self._queue:
                event = self._accept(self._queue.popleft())
                if event is not None:
                    return event
                continue
            try:
                if self._restart or self._generation != self._client.generation or not self._client.connected:
                    await self._subscribe()
                    continue
            except ConnectionLost:
                continue
            self._wakeup = trio.Event()
            await self._wakeup.wait()

    def _accept(self, event: dict[str, Any]) -> dict[str, Any] | None:
        """The event to yield (advancing the cursor), or None (a duplicate, or a gap to re-read)."""
        last = int(event["seq"])
        if event.get("event") == "events.gap":
            data = event.get("data") or {}
            if data.get("reason") == "backpressure":
                self._restart = True
                self._queue.clear()  # after the gap: the replay from the cursor brings it again
                return None
            last = int(data.get("to_seq", last))
        if self.cursor is not None and last <= self.cursor:
            return None
        self.cursor = last
        return event

    async def _subscribe(self) -> None:
        client = self._client
        lost = self._generation is not None and (self._generation != client.generation or not client.connected)
        if lost and not self._reconnect:
            raise WireError("connection_lost", "the connection to the daemon was lost")
        if not client.connected:
            await client.reconnect()
        generation = client.generation
        if self._generation == generation:
            await client.unsubscribe(blackboard=self.prefix)  # answered after the old subscription's last event
        self._queue.clear()
        self._restart = False
        answer = await client.subscribe(blackboard=self.prefix, since=self.cursor)
        if self.cursor is None:
            self.cursor = int(answer["last_seq"])
        self._generation = generation

    # -- closing --------------------------------------------------------------------------

    def _forget(self) -> None:
        self._client._forget_board_stream(self)

    async def _unsubscribe(self) -> None:
        await self._client.unsubscribe(blackboard=self.prefix)
