"""Which blackboard prefixes one connection follows, and the seam between replay and live, sans-IO.

The blackboard counterpart of ``follow.Follow``. Changes have one seq space (the
blackboard's); a connection may follow several prefixes, each a subscription of its own
with a cursor: the last seq sent on it. A change goes out on every followed prefix its key
is under, if its seq is above that prefix's cursor: that removes the overlap between a
replay and the live stream. (Overlapping prefixes each get their copy, named by their
``blackboard`` field; the client routes by it.)

A replay keeps the order of ``Follow``'s: (1) the IO shell listens to the blackboard,
(2) ``begin`` holds the prefix's live changes, (3) the shell reads the log page by page
from the cursor and passes each stored change to ``replayed``, (4) ``finish`` returns the
held changes still above the cursor. Changes committed before (1) are in the log, those
after it are held, so nothing is missed or sent twice. The hold is bounded: on overflow it
is emptied and ``finish`` asks for another pass over the log (the changes are durable
there) before it hands over.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from echsd.store.rows import BlackboardChange


@dataclass
class _Replay:
    prefix: str
    held: list[BlackboardChange] = field(default_factory=list)
    reread: bool = False


class BoardFollow:
    def __init__(self, max_held: int) -> None:
        self.max_held = max(1, max_held)
        self.cursors: dict[str, int] = {}  # followed prefix -> last seq sent on it
        self._replay: _Replay | None = None

    def __bool__(self) -> bool:
        """Whether any prefix is followed."""
        return bool(self.cursors)

    def position(self, prefix: str) -> int:
        return self.cursors.get(prefix, 0)

    def on_live(self, change: BlackboardChange) -> list[str]:
        """The followed prefixes ``change`` goes out on now (their cursors advance)."""
        key, seq = change.entry.key, change.seq
        out: list[str] = []
        replay = self._replay
        for prefix, cursor in self.cursors.items():
            if not key.startswith(prefix):
                continue
            if replay is not None and replay.prefix == prefix:
                if len(replay.held) >= self.max_held:
                    replay.held.clear()
                    replay.reread = True
                elif not replay.reread:
                    replay.held.append(change)
                continue
            if seq > cursor:
                self.cursors[prefix] = seq
                out.append(prefix)
        return out

    def begin(self, prefix: str, since: int) -> None:
        """Follow ``prefix`` from ``since`` (again, if it was followed); hold its live changes."""
        if self._replay is not None:
            raise RuntimeError("a replay is already in progress on this connection")
        self.cursors[prefix] = since
        self._replay = _Replay(prefix)

    def replayed(self, prefix: str, last_seq: int) -> bool:
        """A stored change (or a gap ending at ``last_seq``): True to send it."""
        if last_seq <= self.position(prefix):
            return False
        self.cursors[prefix] = last_seq
        return True

    def finish(self) -> tuple[list[BlackboardChange], bool]:
        """``(held changes to send, False)``, ending the replay; or ``([], True)``: read the
        log again from the cursor first (the hold overflowed)."""
        replay = self._replay
        if replay is None:
            raise RuntimeError("no replay in progress")
        if replay.reread:
            replay.reread = False
            return [], True
        self._replay = None
        return [change for change in replay.held if self.replayed(replay.prefix, change.seq)], False

    def abort(self) -> None:
        """Forget an interrupted replay (its held changes were not sent)."""
        self._replay = None

    def stop(self, prefix: str) -> bool:
        """Stop following ``prefix``; False if it was not followed."""
        return self.cursors.pop(prefix, None) is not None
