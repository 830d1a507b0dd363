"""``Blackboard``: the daemon's one owner of blackboard state, the IO shell around ``BoardCore``.

Writes go "core decides -> store commits -> publish": wait for room in the store writer,
let the core decide (no checkpoint in between, so decisions are made in submission order),
submit the guarded unit, and let the unit's ``on_done`` apply the outcome to the core and
publish the change to listeners, right after its commit and in commit order. The caller
then gets the entry that committed. If the store refuses a write because the database is
not what the core assumed (``StoreConflict``: another daemon wrote the key), the key is
re-read from the store and the write decided again; a compare-and-set then fails with
``conflict`` as it should, a plain write goes through.

Listeners (wire subscriptions, ``blackboard_wait``) are called synchronously with each
committed change; they must not block, and one that raises is logged and removed.

Shared by several daemons (``share``), every node publishes every change, its own too, as
it reads them back from the change log in seq order when a NOTIFY says the log grew: one
order for all watchers on all nodes, and the cache follows the other nodes' writes.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import trio

from echsd.blackboard.core import BoardCore, Write
from echsd.blackboard.entries import DEFAULT_MAX_VALUE_BYTES, check_key
from echsd.errors import Conflict, NotFound, Unavailable
from echsd.logs import get_logger
from echsd.store import BlackboardChange, BlackboardRow, Statement, Store, StoreConflict, StoreError, Unit, ops, queries

log = get_logger(__name__)

Listener = Callable[[BlackboardChange], None]
DEFAULT_LOG_KEEP = 10_000
MAX_ATTEMPTS = 5  # decisions of one write, when the store keeps finding the key changed
CATCH_UP_PAGE = 1000


class Listening:
    """A listener's registration; ``close()`` stops delivery (idempotent)."""

    def __init__(self, listeners: list[Listening], fn: Listener) -> None:
        self._listeners = listeners
        self.fn = fn
        listeners.append(self)

    def close(self) -> None:
        if self in self._listeners:
            self._listeners.remove(self)


class Blackboard:
    def __init__(self, store: Store, *, max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES, log_keep: int = DEFAULT_LOG_KEEP) -> None:
        self._store = store
        self._max_value_bytes = max_value_bytes
        self._log_keep = log_keep
        self._core: BoardCore | None = None
        self._listeners: list[Listening] = []
        self._announce: Callable[[int], Statement] | None = None  # set by ``share``
        self._published_seq = 0  # shared: the last change published here
        self._grown = trio.Event()
        self._caught_up = trio.Event()  # set (and replaced) whenever ``_published_seq`` moves

    async def load(self) -> None:
        """Read every entry (tombstones too) and the log's last seq; before serving."""

        def read(conn: Any) -> tuple[list[BlackboardRow], int]:
            return queries.load_blackboard(conn), queries.blackboard_log_bounds(conn)[1]

        entries, last_seq = await self._store.read(read)
        self._core = BoardCore(entries, last_seq, max_value_bytes=self._max_value_bytes)
        self._published_seq = last_seq
        log.info("blackboard loaded", entries=sum(not e.deleted for e in entries), last_seq=last_seq)

    @property
    def core(self) -> BoardCore:
        if self._core is None:
            raise Unavailable("the blackboard is not loaded yet")
        return self._core

    # -- reads (what committed) -----------------------------------------------------------

    @property
    def last_seq(self) -> int:
        """The seq of the last committed change (0: none yet)."""
        return self.core.committed_seq

    def get(self, key: Any) -> BlackboardRow:
        entry = self.core.get(check_key(key))
        if entry is None:
            raise NotFound(f"no blackboard entry {key!r}")
        return entry

    def find(self, key: Any) -> BlackboardRow | None:
        return self.core.get(check_key(key))

    def list(self, prefix: Any = "") -> list[BlackboardRow]:
        return self.core.listing(check_key(prefix, what="prefix"))

    async def read_log(self, after: int, prefix: str, limit: int) -> tuple[int, list[BlackboardChange]]:
        """Logged changes after ``after`` under ``prefix`` (see ``queries.read_blackboard_log``)."""
        return await self._store.read(lambda conn: queries.read_blackboard_log(conn, after, prefix, limit))

    # -- writes ---------------------------------------------------------------------------

    async def set(self, key: Any, value: Any, *, writer: str | None = None, if_version: int | None = None) -> BlackboardRow:
        """Write ``value`` at ``key`` in ``writer``'s name (a thread id; None: a client)."""
        return await self._write(key, lambda core, now: core.decide_set(key, value, writer=writer, if_version=if_version, now=now))

    async def delete(self, key: Any, *, writer: str | None = None, if_version: int | None = None) -> BlackboardRow:
        """Delete ``key``; returns its tombstone."""
        return await self._write(key, lambda core, now: core.decide_delete(key, writer=writer, if_version=if_version, now=now))

    async def _write(self, key: Any, decide: Callable[[BoardCore, float], Write]) -> BlackboardRow:
        writer = self._store.writer
        await trio.lowlevel.checkpoint()  # a refused write (conflict) must yield too: no busy retry loop
        for _attempt in range(MAX_ATTEMPTS):
            await writer.wait_room()
            write = decide(self.core, time.time())  # no checkpoint from the decision to the submission
            change = write.change
            statement = ops.write_blackboard(change.entry, seq=change.seq, base_version=write.base_version, keep=self._log_keep)
            statements = [statement] if self._announce is None else [statement, self._announce(change.seq)]
            unit = writer.put_nowait(Unit(statements=statements, on_done=partial(self._settled, write)))
            try:
                await unit.wait()
            except StoreConflict:
                await self._refresh(write.key)
                continue
            if self._announce is not None:  # shared: answer once the watchers here were told
                await self._published(change.seq)
            return change.entry
        raise Conflict(f"blackboard key {key!r} kept changing in the store under {MAX_ATTEMPTS} attempts; nothing was changed")

    def _settled(self, write: Write, error: StoreError | None) -> None:
        """The unit's ``on_done``: apply the outcome, publish a commit (no checkpoint)."""
        if error is not None:
            self.core.failed(write)
            return
        self.core.committed(write)
        if self._announce is None:
            self._publish(write.change)

    def _publish(self, change: BlackboardChange) -> None:
        for listening in tuple(self._listeners):
            try:
                listening.fn(change)
            except Exception:
                log.exception("a blackboard listener failed; removing it", key=change.entry.key)
                listening.close()

    # -- several daemons ------------------------------------------------------------------

    def share(self, announce: Callable[[int], Statement]) -> None:
        """Several nodes write this blackboard: each change's unit also runs ``announce(seq)``
        (a NOTIFY), and changes are published by ``follow`` in log order."""
        self._announce = announce

    def on_grown(self, _payload: str = "") -> None:
        """The log grew (a NOTIFY, from any node, this one included)."""
        self._grown.set()

    async def follow(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Read every new change from the log, apply it to the cache, publish it."""
        task_status.started()
        while True:
            await self._grown.wait()
            self._grown = trio.Event()
            try:
                await self._catch_up()
            except StoreError as exc:
                log.warning("blackboard_catch_up_failed", error=exc.message)
                self._grown.set()
                await trio.sleep(0.2)

    async def _published(self, seq: int) -> None:
        """Wait until change ``seq`` was published here (read back from the log at once,
        not only when its NOTIFY comes back)."""
        self._grown.set()
        while self._published_seq < seq:
            await self._caught_up.wait()

    async def _catch_up(self) -> None:
        while True:
            after = self._published_seq
            _first, changes = await self._store.read(lambda conn: queries.read_blackboard_log(conn, after, "", CATCH_UP_PAGE))
            for change in changes:
                if change.seq <= self._published_seq:
                    continue
                self.core.refreshed(change.entry.key, change.entry, change.seq)
                self._published_seq = change.seq
                self._publish(change)
            self._caught_up.set()
            self._caught_up = trio.Event()
            if len(changes) < CATCH_UP_PAGE:
                return

    async def _refresh(self, key: str) -> None:
        def read(conn: Any) -> tuple[BlackboardRow | None, int]:
            return queries.get_blackboard(conn, key), queries.blackboard_log_bounds(conn)[1]

        stored, last_seq = await self._store.read(read)
        self.core.refreshed(key, stored, last_seq)

    # -- watching ----------------------------------------------------------------------------

    def listen(self, fn: Listener) -> Listening:
        """Call ``fn(change)`` with every change from now on, right after its commit."""
        return Listening(self._listeners, fn)

    async def wait(
        self, *, key: Any = None, prefix: Any = None, after_version: int | None = None, timeout_s: float | None = None
    ) -> list[BlackboardRow]:
        """Entries of ``key`` (or under ``prefix``; neither: any) whose version is above
        ``after_version`` now; if there are none (or no ``after_version`` was given), the
        next ones to change, as soon as they commit. ``[]`` after ``timeout_s``."""
        if key is not None:
            key = check_key(key)
        if prefix is not None:
            prefix = check_key(prefix, what="prefix")

        def wanted(entry: BlackboardRow) -> bool:
            if after_version is not None and entry.version <= after_version:
                return False
            return (key is None or entry.key == key) and (prefix is None or entry.key.startswith(prefix))

        if after_version is not None:
            ready = [entry for entry in self.core.matching(key, prefix) if wanted(entry)]
            if ready:
                return ready
        changed: dict[str, BlackboardRow] = {}
        woken = trio.Event()

        def on_change(change: BlackboardChange) -> None:
            if wanted(change.entry):
                changed[change.entry.key] = change.entry
                woken.set()

        listening = self.listen(on_change)  # no checkpoint since the check above: nothing missed
        try:
            with trio.move_on_after(math.inf if timeout_s is None else timeout_s):
                await woken.wait()
        finally:
            listening.close()
        return list(changed.values())
