"""A connection's subscriptions: hub listeners, store replay, hand-off to the outbox.

The seam rules live in ``follow.Follow`` (sans-IO); this module does the IO around them:
register the hub listener *before* reading the store, page through the stored events
(never the whole log at once, and only when the outbox has room, so a replay never
overflows it), then hand the held live events over. Hub callbacks only append to the
outbox; they never block the store writer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Awaitable, Callable

import orjson
import trio

from echsd.errors import BadRequest
from echsd.events import Event, ThreadDeleted
from echsd.logs import get_logger
from echsd.store import Gap, Store, queries
from echsd.store.queries import EventRow
from echsd.ops.threads import Get, ListThreads
from echsd.threads.hub import EventHub, Listening
from echsd.threads.services import OpRunner
from echsd.wire.encoding import MSGPACK, Encoding
from echsd.wire.follow import ALL, Follow
from echsd.wire.outbox import Outbox

MAX_PAGE = 1000
DELETED = ThreadDeleted.type_name  # a thread's last event: its stream ends
log = get_logger(__name__)

class Subscriptions:
    def __init__(
        self,
        router: OpRunner,
        hub: EventHub,
        store: Store,
        outbox: Outbox,
        wake_writer: Callable[[], None],
        wait_room: Callable[[int, int], Awaitable[None]],
    ) -> None:
        self.router, self.hub, self.store, self.outbox = router, hub, store, outbox
        self.encoding = outbox.encoding
        self._wake_writer = wake_writer
        self._wait_room = wait_room
        self.follow = Follow(max_held=outbox.max_events)
        self._page = max(1, min(MAX_PAGE, outbox.max_events // 2))
        self._listening: dict[str, Listening] = {}

    def _on_live(self, event: Event) -> None:
        """The hub callback: never blocks and never raises (the hub would drop us)."""
        if not self.follow.on_live(event):
            return
        try:
            data = self.encoding.of_event(event)
        except Exception:
            log.exception("cannot encode an event; reporting it as a gap", thread_id=event.thread_id, seq=event.seq)
            self.outbox.drop(event.thread_id, event.seq, event.seq, event.ts)
        else:
            self.outbox.push_event(event.thread_id, event.seq, event.seq, event.ts, data)
        if event.type == DELETED:
            self._gone(event.thread_id)
        self._wake_writer()

    def _gone(self, thread_id: str) -> None:
        """The thread was deleted (its last event just went out): stop following it."""
        self._stop(thread_id)
        self.follow.forget(thread_id)

    async def subscribe(self, key: str, since: int | None) -> dict[str, Any]:
        if key != ALL:
            last = (await self.router.run(Get(thread_id=key)))["last_seq"]  # not_found for an unknown thread
            if since is not None and since > last:
                # Its cursor would hide the live events up to ``since`` and claim a last_seq
                # the thread does not have.
                raise BadRequest(f"since {since} is beyond the thread's last seq ({last}); subscribe with since <= {last}")
        if key not in self._listening:
            self._listening[key] = self.hub.listen(key, self._on_live)
        self.outbox.forget(None if key == ALL else key)
        self.follow.begin(key, since or 0)
        try:
            replayed, held = await self._replay(key, since)
        except BaseException:
            self.follow.abort()
            self._stop(key)
            raise
        # No checkpoint from here to the response: the held events go out before it.
        for event in held:
            self._push_event(event)
            if event.type == DELETED:
                self._gone(event.thread_id)
        self._wake_writer()
        last_seq = self.follow.position(key) if key != ALL else None
        return {"thread_id": key, "since": since, "replayed": replayed + len(held), "last_seq": last_seq}

    async def _replay(self, key: str, since: int | None) -> tuple[int, list[Event]]:
        """Send stored events until the held live ones can take over.

        Returns the number sent and the held events (still to send).
        """
        follow = self.follow
        if since is None:
            if key != ALL:
                last = await self.store.read(lambda conn: queries.last_seq(conn, key))
                follow.skip_to(key, last)
            threads: set[str] = set()
        elif key == ALL:
            listed = await self.router.run(ListThreads())
            threads = {thread["thread_id"] for thread in listed}
        else:
            threads = {key}
        sent = 0
        while True:
            for thread_id in sorted(threads):
                sent += await self._replay_thread(thread_id)
            held, threads = follow.finish()
            if not threads:
                return sent, held

    async def _replay_thread(self, thread_id: str) -> int:
        """Page through one thread's log from its cursor; the next page is read (in a
        worker thread) while this one is sent."""
        sent = 0
        async with trio.open_nursery() as nursery:
            ahead = _Page(nursery, self._read, thread_id, self.follow.position(thread_id))
            while True:
                page = await ahead.get()
                if page is None:
                    return sent
                full = page.count >= self._page
                if full:
                    ahead = _Page(nursery, self._read, thread_id, page.last_seq)
                await self._wait_room(page.count, len(page.data))
                sent += self._push_page(thread_id, page)
                self._wake_writer()
                if not full:
                    return sent

    def _push_page(self, thread_id: str, page: EncodedPage) -> int:
        """Queue a page of stored entries as one outbox item; the number queued.

        Every entry is above the thread's cursor (the page was read from it), so the page
        advances the cursor as a whole.
        """
        if not self.follow.replayed(thread_id, page.first_seq, page.last_seq):
            return 0
        self.outbox.push_event(thread_id, page.first_seq, page.last_seq, page.ts, page.data, page.count)
        return page.count

    async def _read(self, thread_id: str, after: int) -> EncodedPage | None:
        # The read runs in a worker thread (SQLite steps without the GIL); encoding stays
        # on this thread: done in the worker it fights the sender for the GIL (measured slower).
        rows = await self.store.read(lambda conn: queries.read_event_rows(conn, thread_id, after, self._page))
        return encode_page(rows, self.encoding)

    def _push_event(self, event: Event) -> None:
        self.outbox.push_event(event.thread_id, event.seq, event.seq, event.ts, self.encoding.of_event(event))

    def unsubscribe(self, key: str) -> dict[str, Any]:
        self._stop(key)
        return {"thread_id": key, "subscribed": False}

    def _stop(self, key: str) -> None:
        self.follow.stop(key)
        listening = self._listening.pop(key, None)
        if listening is not None:
            listening.close()

    def close(self) -> None:
        """Stop every listener (the connection is gone)."""
        for listening in self._listening.values():
            listening.close()
        self._listening.clear()


@dataclass(frozen=True, slots=True)
class EncodedPage:
    """Stored entries already encoded as frame bytes (one event map after another)."""

    first_seq: int
    last_seq: int
    ts: float
    count: int
    data: bytes


def encode_page(entries: list[EventRow | Gap], encoding: Encoding = MSGPACK) -> EncodedPage | None:
    """Encode stored rows straight to frame bytes."""
    if not entries:
        return None
    parts = []
    encode = encoding.envelope
    for entry in entries:
        if isinstance(entry, Gap):
            parts.append(encode(entry.envelope()))
        else:
            parts.append(encode(Event(entry[0], entry[1], entry[2], entry[3], orjson.loads(entry[4])).envelope()))
    first, last = entries[0], entries[-1]
    return EncodedPage(
        first_seq=first.from_seq if isinstance(first, Gap) else first[1],
        last_seq=last.to_seq if isinstance(last, Gap) else last[1],
        ts=0.0 if isinstance(last, Gap) else last[3],
        count=len(entries),
        data=b"".join(parts),
    )


class _Page:
    """A store read running ahead in the background; ``get`` waits for its result."""

    def __init__(self, nursery: trio.Nursery, read: Callable[[str, int], Awaitable[EncodedPage | None]], thread_id: str, after: int) -> None:
        self._done = trio.Event()
        self._page: EncodedPage | None = None
        nursery.start_soon(self._run, read, thread_id, after)

    async def _run(self, read: Callable[[str, int], Awaitable[EncodedPage | None]], thread_id: str, after: int) -> None:
        self._page = await read(thread_id, after)
        self._done.set()

    async def get(self) -> EncodedPage | None:
        await self._done.wait()
        return self._page
