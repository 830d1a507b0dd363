"""Which blackboard prefixes one connection follows, and the seam between replay and live, sans-IO.

The blackboard counterpart of ``follow.Follow``. Changes have one seq space (the
blackboard's); a connection may follow several prefixes, each a subscription of its own
and a stream of ``echsd.seam.Seam`` (its cursor: the last seq sent on it). A change goes out
on every followed prefix its key is under, if its seq is above that prefix's cursor.
(Overlapping prefixes each get their copy, named by their ``blackboard`` field; the client
routes by it.) A replay follows the seam's steps: listen, ``begin``, read the log from the
cursor through ``replayed``, ``finish``.
"""

from __future__ import annotations

from echsd.seam import Seam
from echsd.store.rows import BlackboardChange


class BoardFollow:
    def __init__(self, max_held: int) -> None:
        self.seam: Seam[str, BlackboardChange] = Seam(max_held)

    @property
    def cursors(self) -> dict[str, int]:
        """Followed prefix -> the last seq sent on it."""
        return self.seam.cursor

    def __bool__(self) -> bool:
        """Whether any prefix is followed."""
        return bool(self.seam.cursor)

    def position(self, prefix: str) -> int:
        return self.seam.position(prefix)

    def on_live(self, change: BlackboardChange) -> list[str]:
        """The followed prefixes ``change`` goes out on now (their cursors advance)."""
        key, seq, seam = change.entry.key, change.seq, self.seam
        out: list[str] = []
        for prefix in list(seam.cursor):
            if not key.startswith(prefix) or (seam.replaying and seam.holds(prefix, seq, change)):
                continue
            if seam.passes(prefix, seq):
                out.append(prefix)
        return out

    def begin(self, prefix: str, since: int) -> None:
        """Follow ``prefix`` from ``since`` (again, if it was followed); hold its live changes."""
        if self.seam.replaying:
            raise RuntimeError("a replay is already in progress on this connection")
        self.seam.cursor[prefix] = since
        self.seam.begin(lambda followed: followed == prefix)

    def replayed(self, prefix: str, last_seq: int) -> bool:
        """A stored change (or a gap ending at ``last_seq``): True to send it."""
        return self.seam.replayed(prefix, last_seq)

    def finish(self) -> tuple[list[BlackboardChange], bool]:
        """``(held changes to send, False)``, ending the replay; or ``([], True)``: read the
        log again from the cursor first (the hold overflowed)."""
        held, reread = self.seam.finish()
        return held, bool(reread)

    def abort(self) -> None:
        """Forget an interrupted replay (its held changes were not sent)."""
        self.seam.abort()

    def stop(self, prefix: str) -> bool:
        """Stop following ``prefix``; False if it was not followed."""
        return self.seam.cursor.pop(prefix, None) is not None
