"""The store writer: one task, one connection, group commit, publish after commit.

Theory of operation. Submitters (thread actors, the blackboard, ...) hand ``Unit``s to
``put``/``put_nowait``; that only appends to a deque, so a thread streaming 40k deltas/s
is never slowed by the disk. The ``run`` task takes *everything* pending, writes it in one
transaction in one ``trio.to_thread`` hop on the single writer connection, and back on
the trio thread calls ``on_commit(events)`` once for the batch, then resolves the units.
While a hop is in flight new units pile up, so batches grow with load: the per-hop and
per-commit costs are paid per batch, not per unit.

Rules this module keeps:
- Publish after commit: ``on_commit`` sees an event only after its transaction committed,
  so no client ever sees an event a crash could take back.
- Order: units commit, publish (``on_commit``, then each unit's ``on_done``) and resolve
  in submission order.
- Isolation: if a batch fails, its units are retried one transaction each; only the
  failing unit gets the error. Transient errors (the backend's ``Conn.is_transient``:
  busy, locked, I/O, disk full; a lost or restarting PostgreSQL server) are retried with
  backoff, logged, and after ``retry_budget_s`` reported to the units, never dropped.
- Cancellation never leaves a half-written transaction: the hop is not abandoned on
  cancel (it finishes, and its result is published) and the transaction helper rolls back
  on any exception. Units the writer could not write before it stopped fail with
  ``StoreClosed``; ``aclose`` is the graceful way to stop.
- ``max_pending`` bounds the units outstanding (queued or in flight): ``put`` waits,
  ``put_nowait`` raises ``trio.WouldBlock``.

The writer knows nothing of the engine: the connection (``echsd.store.conn.Conn``) opens
and commits transactions and inserts events its own fastest way. Where several daemons
share the database, a ``WriteGuard`` runs inside every transaction: before the units, it
checks that each fenced thread is still leased to this node (a unit of a thread adopted
elsewhere fails with ``LeaseLost``, which the guard hears about); after them, it tells the
other nodes what was written (``NOTIFY``, delivered at commit).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import trio

from echsd.events import Event
from echsd.logs import get_logger
from echsd.store.conn import Conn
from echsd.store.errors import LeaseLost, StoreClosed, StoreConflict, StoreError
from echsd.store.unit import Unit, apply_units

log = get_logger("echsd.store.writer")

OnCommit = Callable[[list[Event]], None]
SLOW_BATCH_S = 1.0  # a batch slower than this is logged (store_batch_slow)


class WriteGuard(Protocol):
    """Hooks into every write transaction (on the writer thread), and back on trio."""

    def before(self, conn: Conn, units: Sequence[Unit]) -> None:
        """Raise ``LeaseLost`` if any unit's ``fence`` thread is no longer ours."""

    def after(self, conn: Conn, units: Sequence[Unit]) -> None:
        """Last statements of the transaction (e.g. notifications)."""

    def lost(self, thread_ids: frozenset[str]) -> None:
        """On the trio thread: units of these threads were refused (``LeaseLost``)."""


@dataclass(slots=True)
class WriterStats:
    """Counters for tests, benchmarks and ``status``; mutated on the trio thread only."""

    hops: int = 0  # trips to the writer thread
    transactions: int = 0  # committed transactions
    units: int = 0  # committed units
    events: int = 0  # committed events
    failed_units: int = 0
    isolations: int = 0  # batches that failed and were retried unit by unit
    transient_retries: int = 0
    largest_batch: int = 0
    slowest_batch_s: float = 0.0  # the longest write of one batch, retries included


class StoreWriter:
    """Owns the writer connection once ``run`` starts; see the module docstring."""

    def __init__(
        self,
        conn: Conn,
        on_commit: OnCommit | None = None,
        max_pending: int = 50_000,
        *,
        retry_base_s: float = 0.02,
        retry_max_s: float = 1.0,
        retry_budget_s: float = 30.0,
    ) -> None:
        if max_pending < 1:
            raise ValueError("max_pending must be >= 1")
        self._conn = conn
        self._on_commit = on_commit
        self.guard: WriteGuard | None = None  # set by the cluster (several daemons)
        self.max_pending = max_pending
        self._retry_base_s = retry_base_s
        self._retry_max_s = retry_max_s
        self._retry_budget_s = retry_budget_s
        self._pending: deque[Unit] = deque()
        self._inflight: list[Unit] = []
        self._outstanding = 0  # pending + in flight
        self._last: Unit | None = None
        self._wake = trio.lowlevel.ParkingLot()  # the run task waits here for work
        self._space = trio.lowlevel.ParkingLot()  # put() waits here for room
        self._limiter = trio.CapacityLimiter(1)  # our own: never starved by other hops
        self._running = False
        self._closing = False
        self._closed = False
        self._stopped = trio.Event()
        self.stats = WriterStats()

    # -- submitting ---------------------------------------------------------------

    @property
    def outstanding(self) -> int:
        """Units submitted and not yet resolved."""
        return self._outstanding

    def set_on_commit(self, fn: OnCommit | None) -> None:
        """Set the publisher; the event hub is created after the store."""
        self._on_commit = fn

    def put_nowait(self, unit: Unit) -> Unit:
        """Enqueue ``unit``; raise ``trio.WouldBlock`` if ``max_pending`` are outstanding."""
        self._check_open()
        if self._outstanding >= self.max_pending:
            raise trio.WouldBlock
        self._enqueue(unit)
        return unit

    async def wait_room(self) -> None:
        """Return once a unit fits; ``put_nowait`` right after (no checkpoint between) succeeds.

        The thread runtime waits here, then assigns seqs and enqueues synchronously, so that
        submission order is the order in which it decided things. No checkpoint when there
        is room already: the fast path costs nothing.
        """
        self._check_open()
        while self._outstanding >= self.max_pending:
            await self._space.park()
            self._check_open()

    async def put(self, unit: Unit) -> Unit:
        """Enqueue ``unit``, waiting only while ``max_pending`` units are outstanding.

        If this raises (``Cancelled`` included) the unit was not enqueued.
        """
        self._check_open()
        if self._outstanding < self.max_pending and not self._space:
            await trio.lowlevel.checkpoint_if_cancelled()
            self._enqueue(unit)
            await trio.lowlevel.cancel_shielded_checkpoint()
            return unit
        while True:
            await self._space.park()
            self._check_open()
            if self._outstanding < self.max_pending:
                break
        self._enqueue(unit)
        return unit

    async def commit(self, unit: Unit) -> None:
        """Submit ``unit`` and return once it is committed (``StoreError`` if it failed)."""
        await self.put(unit)
        await unit.wait()

    async def flush(self) -> None:
        """Return once every unit submitted before this call is resolved.

        Units resolve in order, so waiting for the last one is enough. Does not raise
        for failed units: their own ``wait`` does.
        """
        last = self._last
        if last is None or last.done:
            await trio.lowlevel.checkpoint()
            return
        await last.wait_done()

    async def aclose(self) -> None:
        """Refuse new units, commit what is pending, then stop ``run``."""
        self._closing = True
        self._wake.unpark_all()
        self._space.unpark_all()
        if self._running:
            await self._stopped.wait()
            return
        if not self._closed:
            self._stop("store writer closed before it ran")
        await trio.lowlevel.checkpoint()

    def _check_open(self) -> None:
        if self._closing or self._closed:
            raise StoreClosed("the store writer is closed")

    def _enqueue(self, unit: Unit) -> None:
        if unit._submitted:
            raise ValueError("a Unit can be submitted only once")
        unit._submitted = True
        self._pending.append(unit)
        self._outstanding += 1
        self._last = unit
        if self._wake:
            self._wake.unpark()

    # -- the writer task ------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The writer task; lives in the daemon's root nursery until ``aclose``."""
        if self._running or self._closed:
            raise RuntimeError("StoreWriter.run() is already running or finished")
        self._running = True
        task_status.started()
        try:
            while True:
                if not self._pending:
                    if self._closing:
                        return
                    await self._wake.park()
                    continue
                batch = list(self._pending)
                self._pending.clear()
                self._inflight = batch
                started = trio.current_time()
                await self._write(batch)
                self._inflight = []
                self._note_if_slow(batch, trio.current_time() - started)
        finally:
            self._stop("the store writer stopped before this write was committed")

    def _note_if_slow(self, batch: Sequence[Unit], seconds: float) -> None:
        """Events go out only after their commit, so a slow one stalls every client's
        stream: say how big it was, so the cause can be named (I/O, a checkpoint, a fold)."""
        self.stats.slowest_batch_s = max(self.stats.slowest_batch_s, seconds)
        if seconds >= SLOW_BATCH_S:
            log.warning(
                "store_batch_slow",
                duration_s=round(seconds, 3),
                units=len(batch),
                events=sum(len(u.events) for u in batch),
                statements=sum(len(u.statements) for u in batch),
            )

    def _stop(self, reason: str) -> None:
        """Resolve everything still outstanding with ``StoreClosed``; wake everyone."""
        self._running = False
        self._closed = True
        leftovers = [u for u in self._inflight if not u.done]
        leftovers.extend(self._pending)
        self._inflight = []
        self._pending.clear()
        if leftovers:
            log.warning("store_writer_dropped_pending", units=len(leftovers), reason=reason)
        for unit in leftovers:
            _settle(unit, StoreClosed(reason))
        self._outstanding -= len(leftovers)
        self._stopped.set()
        self._space.unpark_all()

    async def _write(self, batch: list[Unit]) -> None:
        """Commit ``batch``: one transaction, else one per unit; retry transient errors."""
        remaining = batch
        isolate = False
        delay = self._retry_base_s
        first_failure: float | None = None
        self.stats.largest_batch = max(self.stats.largest_batch, len(batch))
        while remaining:
            self.stats.hops += 1
            if not isolate:
                error = await trio.to_thread.run_sync(
                    self._apply_together, remaining, limiter=self._limiter
                )
                if error is None:
                    self._finish(remaining, [None] * len(remaining), transactions=1)
                    return
                if not self._conn.is_transient(error):
                    log.warning("store_batch_failed", units=len(remaining), error=repr(error))
                    self.stats.isolations += 1
                    isolate = True
                    continue
            else:
                results, error = await trio.to_thread.run_sync(
                    self._apply_each, remaining, limiter=self._limiter
                )
                done = remaining[: len(results)]
                self._finish(done, results, transactions=sum(r is None for r in results))
                remaining = remaining[len(results) :]
                if error is None:
                    return
            # A transient error: back off and retry what is left, within the budget.
            now = trio.current_time()
            first_failure = now if first_failure is None else first_failure
            if now - first_failure >= self._retry_budget_s:
                log.error("store_write_gave_up", units=len(remaining), error=repr(error))
                failure = StoreError(
                    f"store write failed after {self._retry_budget_s:.0f}s of retries: {error}"
                )
                failure.__cause__ = error
                self._finish(remaining, [failure] * len(remaining), transactions=0)
                return
            self.stats.transient_retries += 1
            log.warning("store_write_retry", units=len(remaining), error=repr(error), delay_s=delay)
            await trio.sleep(delay)
            delay = min(delay * 2, self._retry_max_s)

    def _finish(
        self, units: Sequence[Unit], results: Sequence[BaseException | None], transactions: int
    ) -> None:
        """On the trio thread, right after the hop returned: publish, then resolve.

        No checkpoint in here, so a cancellation cannot fall between commit and publish.
        """
        events: list[Event] = []
        stored = 0
        for unit, error in zip(units, results, strict=True):
            if error is None:
                events.extend(unit.events)
                stored += len(unit.events)
                events.extend(unit.notices)
        stats = self.stats
        stats.transactions += transactions
        stats.events += stored
        if events and self._on_commit is not None:
            try:
                self._on_commit(events)
            except Exception:
                log.exception("store_on_commit_failed", events=len(events))
        for unit, error in zip(units, results, strict=True):
            if error is None:
                stats.units += 1
                _settle(unit, None)
                continue
            stats.failed_units += 1
            if not isinstance(error, StoreError):
                wrapped = StoreError(f"store write failed: {type(error).__name__}: {error}")
                wrapped.__cause__ = error
                error = wrapped
            if isinstance(error, StoreConflict):  # an expected outcome: the owner decides again
                log.info("store_unit_conflict", error=str(error))
            elif isinstance(error, LeaseLost):
                log.warning("store_unit_fenced", error=str(error))
                if self.guard is not None:
                    self._tell_guard(error.thread_ids)
            else:
                log.error(
                    "store_unit_failed",
                    error=str(error),
                    statements=len(unit.statements),
                    events=len(unit.events),
                )
            _settle(unit, error)
        self._outstanding -= len(units)
        if self._space:
            self._space.unpark_all()

    def _tell_guard(self, thread_ids: frozenset[str]) -> None:
        assert self.guard is not None
        try:
            self.guard.lost(thread_ids)
        except Exception:
            log.exception("store_guard_failed")

    # -- on the writer thread ----------------------------------------------------------

    def _apply(self, units: Sequence[Unit]) -> None:
        """One transaction: the guard's check, the units, the guard's last word."""
        guard = self.guard
        with self._conn.transaction():
            if guard is not None:
                guard.before(self._conn, units)
            apply_units(self._conn, units)
            if guard is not None:
                guard.after(self._conn, units)

    def _apply_together(self, units: Sequence[Unit]) -> Exception | None:
        try:
            self._apply(units)
        except Exception as exc:  # reported to the trio side
            return exc
        return None

    def _apply_each(self, units: Sequence[Unit]) -> tuple[list[Exception | None], Exception | None]:
        """One transaction per unit; stop at the first transient error and return it."""
        results: list[Exception | None] = []
        for unit in units:
            try:
                self._apply((unit,))
            except Exception as exc:
                if self._conn.is_transient(exc):
                    return results, exc
                results.append(exc)
            else:
                results.append(None)
        return results, None


def _settle(unit: Unit, error: StoreError | None) -> None:
    """Run the unit's ``on_done``, then wake its waiters (on the trio thread, no checkpoint)."""
    if unit.on_done is not None:
        try:
            unit.on_done(error)
        except Exception:
            log.exception("store_on_done_failed")
    unit._resolve(error)
