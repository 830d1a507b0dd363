"""Which threads one connection follows, and the seam between replay and live, sans-IO.

A connection follows a set of threads and/or every thread (``*``). The seam itself (a
cursor per thread, live events held during a replay, bounded) is ``echsd.seam.Seam``; this
class says which threads are followed and what a subscription to ``*`` means for a thread
met for the first time (its cursor starts at ``*``'s ``since``). An event goes out only
above its thread's cursor, which removes the overlap between a replay and the live stream
and the second copy where ``*`` and the thread's own subscription both match.
"""

from __future__ import annotations

from echsd.events import Event
from echsd.seam import Seam

ALL = "*"


class Follow:
    def __init__(self, max_held: int) -> None:
        self.all = False
        self.threads: set[str] = set()
        self.seam: Seam[str, Event] = Seam(max_held)

    def covers(self, thread_id: str) -> bool:
        return self.all or thread_id in self.threads

    def position(self, thread_id: str) -> int:
        return self.seam.position(thread_id)

    # -- live -----------------------------------------------------------------------------

    def on_live(self, event: Event) -> bool:
        """True when ``event`` must go out now. The hot path (once per event and connection):
        ``Seam.passes`` written out here, on the seam's own cursor, to spare two calls."""
        thread_id = event.thread_id
        if not (self.all or thread_id in self.threads):
            return False
        seam = self.seam
        if seam.holding is not None and seam.holds(thread_id, event.seq, event):
            return False
        cursor = seam.cursor
        position = cursor.get(thread_id)
        if position is None:
            position = seam.default
        if event.seq <= position:
            return False
        cursor[thread_id] = event.seq
        return True

    # -- replay ---------------------------------------------------------------------------

    def begin(self, key: str, since: int) -> None:
        """Follow ``key`` (a thread id or ``*``) from ``since``; hold its live events."""
        seam = self.seam
        if seam.replaying:
            raise RuntimeError("a replay is already in progress on this connection")
        if key == ALL:
            self.all, seam.default = True, since
            seam.cursor.clear()
            seam.begin(lambda thread_id: True)
        else:
            self.threads.add(key)
            seam.cursor[key] = since
            seam.begin(lambda thread_id: thread_id == key)

    def skip_to(self, thread_id: str, seq: int) -> None:
        """Start the thread's stream after ``seq`` (a live-only subscription)."""
        self.seam.cursor[thread_id] = max(self.position(thread_id), seq)

    def replayed(self, thread_id: str, first_seq: int, last_seq: int) -> bool:
        """A stored entry (event: first == last == seq; gap: its range): True to send it."""
        return self.seam.replayed(thread_id, first_seq, last_seq)

    def finish(self) -> tuple[list[Event], set[str]]:
        """``(held events to send, threads to re-read)``; the replay ends when the set is empty."""
        return self.seam.finish()

    def abort(self) -> None:
        """Forget an interrupted replay (its live events were not sent)."""
        self.seam.abort()

    # -- stop -----------------------------------------------------------------------------

    def stop(self, key: str) -> bool:
        """Stop following ``key``; False if it was not followed."""
        seam = self.seam
        if key == ALL:
            if not self.all:
                return False
            seam.cursor = {tid: self.position(tid) for tid in self.threads}  # where "*" had them
            self.all, seam.default = False, 0
            return True
        if key not in self.threads:
            return False
        self.threads.discard(key)
        if not self.all:
            seam.cursor.pop(key, None)
        return True

    def forget(self, thread_id: str) -> None:
        """The thread is gone (deleted): no cursor or subscription of it is kept."""
        self.threads.discard(thread_id)
        self.seam.cursor.pop(thread_id, None)
