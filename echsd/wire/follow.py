"""Which threads one connection follows, and the seam between replay and live, sans-IO.

Theory of operation. A connection follows a set of threads and/or every thread (``*``).
For each thread it keeps a cursor: the last seq handed to the outbox. An event goes out
only if its seq is above the cursor, which removes every duplicate: the overlap between
a replay and the live stream, and the second copy when both ``*`` and the thread's own
subscription match.

A replay (``subscribe`` with ``since``) goes like this, and the IO shell must keep the
order: (1) register the hub listener, (2) ``begin`` — from now on live events of the
replayed threads are held in a buffer instead of going out, (3) read the store page by
page from each thread's cursor and pass every entry to ``replayed``, (4) ``finish``
returns the held events still above the cursors. Events committed before (1) are in the
store; events committed after it are in the buffer; so nothing is missed and nothing is
sent twice. The buffer is bounded: on overflow it is emptied and ``finish`` names the
threads to read from the store again (the events are durable there), until it succeeds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from echsd.events import Event

ALL = "*"


@dataclass
class _Replay:
    key: str
    held: list[Event] = field(default_factory=list)
    reread: set[str] = field(default_factory=set)

    def covers(self, thread_id: str) -> bool:
        return self.key == ALL or self.key == thread_id


class Follow:
    def __init__(self, max_held: int) -> None:
        self.max_held = max(1, max_held)
        self.all = False
        self.all_since = 0  # cursor of threads first met through "*"
        self.threads: set[str] = set()
        self.cursor: dict[str, int] = {}
        self._replay: _Replay | None = None

    def covers(self, thread_id: str) -> bool:
        return self.all or thread_id in self.threads

    def position(self, thread_id: str) -> int:
        return self.cursor.get(thread_id, self.all_since if self.all else 0)

    # -- live -----------------------------------------------------------------------------

    def on_live(self, event: Event) -> bool:
        """True when ``event`` must go out now. (The hot path: once per event and
        connection, hence written out rather than composed of the helpers.)"""
        thread_id = event.thread_id
        if not (self.all or thread_id in self.threads):
            return False
        replay = self._replay
        if replay is not None and replay.covers(thread_id):
            if len(replay.held) >= self.max_held:
                replay.reread.update(e.thread_id for e in replay.held)
                replay.reread.add(thread_id)
                replay.held.clear()
            else:
                replay.held.append(event)
            return False
        position = self.cursor.get(thread_id)
        if position is None:
            position = self.all_since if self.all else 0
        if event.seq <= position:
            return False
        self.cursor[thread_id] = event.seq
        return True

    # -- replay ---------------------------------------------------------------------------

    def begin(self, key: str, since: int) -> None:
        """Follow ``key`` (a thread id or ``*``) from ``since``; hold its live events."""
        if self._replay is not None:
            raise RuntimeError("a replay is already in progress on this connection")
        if key == ALL:
            self.all, self.all_since = True, since
            self.cursor.clear()
        else:
            self.threads.add(key)
            self.cursor[key] = since
        self._replay = _Replay(key)

    def skip_to(self, thread_id: str, seq: int) -> None:
        """Start the thread's stream after ``seq`` (a live-only subscription)."""
        self.cursor[thread_id] = max(self.position(thread_id), seq)

    def replayed(self, thread_id: str, first_seq: int, last_seq: int) -> bool:
        """A stored entry (event: first == last == seq; gap: its range): True to send it."""
        if last_seq <= self.position(thread_id):
            return False
        self.cursor[thread_id] = last_seq
        return True

    def finish(self) -> tuple[list[Event], set[str]]:
        """``(held events to send, threads to re-read)``; the replay ends when the set is empty."""
        replay = self._replay
        if replay is None:
            raise RuntimeError("no replay in progress")
        if replay.reread:
            reread, replay.reread = replay.reread, set()
            return [], reread
        self._replay = None
        return [event for event in replay.held if self._advance(event.thread_id, event.seq)], set()

    def abort(self) -> None:
        """Forget an interrupted replay (its live events were not sent)."""
        self._replay = None

    # -- stop -----------------------------------------------------------------------------

    def stop(self, key: str) -> bool:
        """Stop following ``key``; False if it was not followed."""
        if key == ALL:
            if not self.all:
                return False
            self.cursor = {tid: self.position(tid) for tid in self.threads}  # where "*" had them
            self.all = False
            return True
        if key not in self.threads:
            return False
        self.threads.discard(key)
        if not self.all:
            self.cursor.pop(key, None)
        return True

    def forget(self, thread_id: str) -> None:
        """The thread is gone (deleted): no cursor or subscription of it is kept."""
        self.threads.discard(thread_id)
        self.cursor.pop(thread_id, None)

    def _advance(self, thread_id: str, seq: int) -> bool:
        if seq <= self.position(thread_id):
            return False
        self.cursor[thread_id] = seq
        return True
