"""Replay, then go live: the seam rules, written once (sans-IO).

A stream here is numbered by seq (a thread's events, the blackboard's changes). A reader
that replays the stored part and then follows the live part loses nothing and repeats
nothing if it keeps, per stream, a *cursor* (the last seq it passed on) and follows these
steps, in this order:

1. listen to the live source first;
2. ``begin(covers, since)``: from now on live items of the streams ``covers`` names are held;
3. read the store page by page from each cursor, passing every stored item (or range: a
   gap) to ``replayed``: it goes on only if it is above the stream's cursor;
4. ``finish()``: the held items above their cursors go on, and the replay is over.

Items committed before (1) are in the store; items committed after it are held; so nothing
is missed and nothing is sent twice. The hold is bounded (``max_held``): on overflow it is
emptied and ``finish`` names the streams to read again from their cursors (the items are
durable there), until it succeeds. Outside a replay, ``passes`` lets an item on only above
its stream's cursor, which also removes the second copy where two subscriptions overlap.

Used by the wire's thread subscriptions (``wire/follow.py``) and blackboard subscriptions
(``wire/board_follow.py``), the client's event streams (``wire/stream.py``), the app-server's
feeds (``appserver/feed.py``) and the cluster's relay (``cluster/relay.py``).
"""

from __future__ import annotations

from typing import Callable, Generic, Hashable, TypeVar

K = TypeVar("K", bound=Hashable)  # a stream: a thread id, a blackboard prefix
T = TypeVar("T")  # a held live item


class Seam(Generic[K, T]):
    __slots__ = ("cursor", "default", "max_held", "holding", "_held", "_reread")

    def __init__(self, max_held: int = 10_000, default: int = 0) -> None:
        self.cursor: dict[K, int] = {}  # per stream: the last seq passed on
        self.default = default  # the cursor of a stream not met yet
        self.max_held = max(1, max_held)
        self.holding: Callable[[K], bool] | None = None  # while a replay runs: the streams it holds
        self._held: list[tuple[K, int, T]] = []
        self._reread: set[K] = set()

    def position(self, key: K) -> int:
        return self.cursor.get(key, self.default)

    def passes(self, key: K, first: int, last: int | None = None) -> bool:
        """An item (or a range ``first..last``): True, and the cursor moves on, if it ends
        above the stream's cursor; False for what was passed on already."""
        end = first if last is None else last
        if end <= self.cursor.get(key, self.default):
            return False
        self.cursor[key] = end
        return True

    # -- a replay -------------------------------------------------------------------------

    @property
    def replaying(self) -> bool:
        return self.holding is not None

    def begin(self, covers: Callable[[K], bool]) -> None:
        """Hold the live items of the streams ``covers`` names until ``finish``."""
        if self.holding is not None:
            raise RuntimeError("a replay is already in progress")
        self.holding = covers
        self._held = []
        self._reread = set()

    def holds(self, key: K, seq: int, item: T) -> bool:
        """During a replay: True if ``item`` was held (it must not go on now)."""
        covers = self.holding
        if covers is None or not covers(key):
            return False
        if key in self._reread:
            return True  # its stream is read again from the store anyway
        if len(self._held) >= self.max_held:
            self._reread.update(k for k, _seq, _item in self._held)
            self._reread.add(key)
            self._held = []
        else:
            self._held.append((key, seq, item))
        return True

    def replayed(self, key: K, first: int, last: int | None = None) -> bool:
        """A stored item (or range) read during the replay: True to pass it on."""
        return self.passes(key, first, last)

    def finish(self) -> tuple[list[T], set[K]]:
        """``(held items to pass on now, streams to read again)``: the replay is over when the
        set is empty; otherwise read those streams from their cursors and ``finish`` again."""
        if self.holding is None:
            raise RuntimeError("no replay in progress")
        if self._reread:
            reread, self._reread = self._reread, set()
            return [], reread
        self.holding = None
        held, self._held = self._held, []
        return [item for key, seq, item in held if self.passes(key, seq)], set()

    def abort(self) -> None:
        """Forget an interrupted replay (its held items were not passed on)."""
        self.holding = None
        self._held = []
        self._reread = set()
