"""``EventRelay``: events of threads run by other nodes, into this node's event hub.

A node's own writer publishes its own threads' events after commit. For every other thread,
the owner's transaction ends with a NOTIFY naming the seqs it appended; the relay reads
those events back from the shared log and publishes them here, in seq order, so a client
on any node gets the same stream, and the subscription's replay/live seam (``wire.follow``)
works unchanged: whatever was committed before a subscriber listened is in the log,
whatever after is relayed.

Live-only events (``thread.deleted``: its log went with the deletion, nothing is left to
read back) come whole in the owner's notification; each is published after whatever was
still to be read for its thread, and ends the relay's interest in a deleted thread.

Only threads someone here listens to are read. Per thread the relay remembers the last
seq it published (while it is listened to), so a notification lost to a reconnect is
made up for by reading from there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import trio

from echsd.cluster.channels import parse_event_notice, parse_notices
from echsd.events import Event, ThreadDeleted
from echsd.logs import get_logger
from echsd.seam import Seam
from echsd.store import Gap, Store, queries
from echsd.threads.hub import EventHub

log = get_logger(__name__)

READ_CHUNK = 2000
TO_THE_END = 2**62


class EventRelay:
    def __init__(self, store: Store, hub: EventHub, is_local: Callable[[str], bool], node_id: str) -> None:
        self._store = store
        self._hub = hub
        self._is_local = is_local
        self._node_id = node_id  # its own notices were published here by its writer
        self._seam: Seam[str, Event] = Seam()  # per thread: the last seq published here
        self._wanted: dict[str, tuple[int, int]] = {}  # thread -> (first, last) to read
        self._notices: list[Event] = []  # live-only events, published after the reads before them
        self._wake = trio.Event()
        self.relayed = 0  # events published here (for status and tests)

    # -- fed by the listener (trio thread, must not block) ---------------------------------

    def on_notice(self, payload: str) -> None:
        for thread_id, first, last in parse_event_notice(payload):
            self._want(thread_id, first, last)

    def on_live_notice(self, payload: str) -> None:
        sender, events = parse_notices(payload)
        if sender == self._node_id:
            return
        wanted = [event for event in events if not self._is_local(event.thread_id) and self._hub.wants(event.thread_id)]
        if wanted:
            self._notices.extend(wanted)
            self._wake.set()

    def on_reconnect(self) -> None:
        """Notifications may have been lost: read on from every cursor."""
        for thread_id, cursor in list(self._seam.cursor.items()):
            self._want(thread_id, cursor + 1, TO_THE_END)

    def _want(self, thread_id: str, first: int, last: int) -> None:
        if self._is_local(thread_id) or not self._hub.wants(thread_id):
            self._seam.cursor.pop(thread_id, None)
            return
        start = self._seam.cursor.get(thread_id, first - 1) + 1
        if last < start:
            return
        pending = self._wanted.get(thread_id)
        self._wanted[thread_id] = (start, last) if pending is None else (min(pending[0], start), max(pending[1], last))
        self._wake.set()

    # -- the task ----------------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            await self._wake.wait()
            self._wake = trio.Event()
            wanted, self._wanted = self._wanted, {}
            notices, self._notices = self._notices, []
            try:
                found = await self._store.read(lambda conn: _read_ranges(conn, wanted)) if wanted else {}
            except Exception:
                log.exception("cluster_relay_read_failed", threads=len(wanted))
                for thread_id, (first, last) in wanted.items():  # try again shortly
                    self._want(thread_id, first, last)
                self._notices[:0] = notices  # still after those reads
                self._wake.set()
                await trio.sleep(0.2)
                continue
            for thread_id, events in found.items():
                if self._is_local(thread_id):
                    continue
                self._publish(thread_id, events)
            for notice in notices:
                self._publish(notice.thread_id, [notice])
                if notice.type == ThreadDeleted.type_name:  # its last event: nothing follows
                    self._seam.cursor.pop(notice.thread_id, None)

    def _publish(self, thread_id: str, events: list[Event]) -> None:
        fresh = [event for event in events if self._seam.passes(thread_id, event.seq)]
        if fresh:
            self.relayed += len(fresh)
            self._hub.publish(fresh)


def _read_ranges(conn: Any, wanted: dict[str, tuple[int, int]]) -> dict[str, list[Event]]:
    found: dict[str, list[Event]] = {}
    for thread_id, (first, last) in wanted.items():
        events: list[Event] = []
        after = first - 1
        while after < last:
            rows = queries.read_event_rows(conn, thread_id, after, READ_CHUNK)
            for row in rows:
                if isinstance(row, Gap):  # folded deltas: nothing to publish for them
                    after = row.to_seq
                    continue
                if row[1] > last:
                    break
                events.append(queries.event_from_row(row))
                after = row[1]
            if len(rows) < READ_CHUNK:
                break
        found[thread_id] = events
    return found
