"""``BoardCore``: every decision about the blackboard's state, sans-IO.

Theory of operation. The core holds two layers: ``committed`` (a cache of what the store
holds: every entry, tombstones included, and the last seq logged) and, per key, the writes
decided but not yet committed (``pending``), in order. A decision reads through both
layers, so writes decided back to back chain (the second sees the first's version) without
waiting for a commit; reads see only what committed. A decision returns a ``Write``: the
logged change (seq, entry after it) and the version the store's row must still have
(``base_version``), which the store's statement checks, so the database holds the
compare-and-set too (``echsd.store.ops.write_blackboard``). The IO shell reports each
write's outcome: ``committed`` moves it into the cache; ``failed`` forgets it (a later
pending write of the same key was decided on top of it and fails in the store the same
way); ``refreshed`` puts what the store says in place of a stale cached entry.

Rules: versions only grow, per key, across a delete and a re-create (a deleted key stays
as a tombstone); ``if_version`` compares with the *visible* version, 0 when the key is
absent or deleted, so ``if_version=0`` means "create only"; a failed compare-and-set
raises ``Conflict`` and changes nothing. Seqs are decided in order; a write that fails
leaves its seq unused, so a watcher may see a seq skipped, never one repeated.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from echsd.blackboard.entries import check_key, stored_value
from echsd.errors import Conflict, NotFound
from echsd.store.queries import prefix_end
from echsd.store.rows import BlackboardChange, BlackboardRow


@dataclass(frozen=True, slots=True)
class Write:
    """A decided change and the version the store's row must be at (0: no row) for it to apply."""

    change: BlackboardChange
    base_version: int

    @property
    def key(self) -> str:
        return self.change.entry.key


class BoardCore:
    def __init__(self, entries: Iterable[BlackboardRow], last_seq: int, *, max_value_bytes: int) -> None:
        self.max_value_bytes = max_value_bytes
        self._committed: dict[str, BlackboardRow] = {entry.key: entry for entry in entries}
        self._keys = sorted(self._committed)  # every key, tombstones included: prefix ranges
        self._pending: dict[str, deque[Write]] = {}
        self.committed_seq = last_seq  # the last seq logged
        self.decided_seq = last_seq  # the last seq given to a write

    # -- reads: what committed ----------------------------------------------------------

    def get(self, key: str) -> BlackboardRow | None:
        """The entry, None when absent or deleted."""
        entry = self._committed.get(key)
        return None if entry is None or entry.deleted else entry

    def listing(self, prefix: str = "") -> list[BlackboardRow]:
        """The live entries under ``prefix``, in key order."""
        return [entry for entry in self.matching(prefix=prefix) if not entry.deleted]

    def matching(self, key: str | None = None, prefix: str | None = None) -> Iterator[BlackboardRow]:
        """Entries (tombstones too) that are ``key``, or under ``prefix``, in key order."""
        if key is not None:
            entry = self._committed.get(key)
            if entry is not None and (prefix is None or key.startswith(prefix)):
                yield entry
            return
        prefix = prefix or ""
        keys = self._keys
        end = prefix_end(prefix) if prefix else None
        stop = len(keys) if end is None else bisect_left(keys, end)
        for index in range(bisect_left(keys, prefix), stop):
            yield self._committed[keys[index]]

    # -- decisions ----------------------------------------------------------------------

    def decide_set(self, key: Any, value: Any, *, writer: str | None, if_version: int | None, now: float) -> Write:
        """Write ``value`` at ``key`` (``if_version``: only if the key is at that version)."""
        key = check_key(key)
        kept = stored_value(value, self.max_value_bytes)
        current = self._latest(key)
        self._check_version(key, current, if_version)
        return self._decide(key, kept, writer, now, current, deleted=False)

    def decide_delete(self, key: Any, *, writer: str | None, if_version: int | None, now: float) -> Write:
        """Delete ``key`` (leaving a tombstone); ``NotFound`` if it is absent or deleted."""
        key = check_key(key)
        current = self._latest(key)
        self._check_version(key, current, if_version)
        if current is None or current.deleted:
            raise NotFound(f"no blackboard entry {key!r}")
        return self._decide(key, None, writer, now, current, deleted=True)

    def _latest(self, key: str) -> BlackboardRow | None:
        pending = self._pending.get(key)
        return pending[-1].change.entry if pending else self._committed.get(key)

    @staticmethod
    def _check_version(key: str, current: BlackboardRow | None, if_version: int | None) -> None:
        if if_version is None:
            return
        visible = 0 if current is None or current.deleted else current.version
        if visible != if_version:
            state = "absent" if current is None else "deleted" if current.deleted else f"at version {visible}"
            raise Conflict(f"blackboard key {key!r} is {state}, not at version {if_version}; nothing was changed")

    def _decide(self, key: str, value: Any, writer: str | None, now: float, current: BlackboardRow | None, *, deleted: bool) -> Write:
        base = 0 if current is None else current.version
        self.decided_seq += 1
        entry = BlackboardRow(key, value, base + 1, writer, now, deleted)
        write = Write(BlackboardChange(self.decided_seq, entry), base)
        self._pending.setdefault(key, deque()).append(write)
        return write

    # -- outcomes -------------------------------------------------------------------------

    def committed(self, write: Write) -> None:
        self._drop_pending(write)
        key = write.key
        if key not in self._committed:
            insort(self._keys, key)
        self._committed[key] = write.change.entry
        self.committed_seq = max(self.committed_seq, write.change.seq)

    def failed(self, write: Write) -> None:
        self._drop_pending(write)

    def refreshed(self, key: str, stored: BlackboardRow | None, last_seq: int) -> None:
        """The store's own view of ``key`` and of the log, after a write found the cache
        stale (another daemon wrote). A stored entry replaces the cached one only if it is
        newer (versions only grow; the read may predate a commit of ours), and writes
        still pending on the key keep their say."""
        self.decided_seq = max(self.decided_seq, last_seq)
        self.committed_seq = max(self.committed_seq, last_seq)
        if stored is None or key in self._pending:
            return
        cached = self._committed.get(key)
        if cached is None:
            insort(self._keys, key)
        elif cached.version >= stored.version:
            return
        self._committed[key] = stored

    def _drop_pending(self, write: Write) -> None:
        queue = self._pending.get(write.key)
        if queue is None:
            return
        try:
            queue.remove(write)
        except ValueError:
            return
        if not queue:
            del self._pending[write.key]
