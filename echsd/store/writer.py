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
- Isolation and retries: see ``commit.py`` (``BatchCommitter``), which writes one batch.
- Cancellation never leaves a half-written transaction: the hop is not abandoned on
  cancel (it finishes, and its result is published) and the transaction helper rolls back
  on any exception. Units the writer could not write before it stopped fail with
  ``StoreClosed``; ``aclose`` is the graceful way to stop.
- ``max_pending`` bounds the units outstanding (queued or in flight): ``put`` waits,
  ``put_nowait`` raises ``trio.WouldBlock``.

The writer knows nothing of the engine: the connection (``echsd.store.conn.Conn``) opens
and commits transactions and inserts events its own fastest way.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence

import trio

from echsd.events import Event
from echsd.logs import get_logger
from echsd.store.commit import BatchCommitter, WriteGuard, WriterStats
from echsd.store.conn import Conn
from echsd.store.errors import LeaseLost, StoreClosed, StoreConflict, StoreError
from echsd.store.unit import Unit

log = get_logger("echsd.store.writer")

OnCommit = Callable[[list[Event]], None]
OnBatch = Callable[[int, int, float], None]  # (units, events, seconds) of one commit batch
SLOW_BATCH_S = 1.0  # a batch slower than this is logged (store_batch_slow)


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
        self._on_commit = on_commit
        self.max_pending = max_pending
        self.stats = WriterStats()
        self.on_batch: OnBatch | None = None  # told of each commit batch (the daemon's metrics)
        self._committer = BatchCommitter(
            conn, self.stats, retry_base_s=retry_base_s, retry_max_s=retry_max_s, retry_budget_s=retry_budget_s
        )
        self._pending: deque[Unit] = deque()
        self._inflight: list[Unit] = []
        self._outstanding = 0  # pending + in flight
        self._last: Unit | None = None
        self._wake = trio.lowlevel.ParkingLot()  # the run task waits here for work
        self._space = trio.lowlevel.ParkingLot()  # put() waits here for room
        self._running = False
        self._closing = False
        self._closed = False
        self._stopped = trio.Event()

    @property
    def guard(self) -> WriteGuard | None:
        """Runs inside every write transaction where several daemons share the store."""
        return self._committer.guard

    @guard.setter
    def guard(self, guard: WriteGuard | None) -> None:
        self._committer.guard = guard

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
        if self._committer.guard is not None:
            self._committer.guard.submitted(unit)
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
                started, events_before = trio.current_time(), self.stats.events
                await self._committer.write(batch, self._finish)
                self._inflight = []
                elapsed = trio.current_time() - started
                self._note_if_slow(batch, elapsed)
                if self.on_batch is not None:
                    self.on_batch(len(batch), self.stats.events - events_before, elapsed)
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

    def _finish(self, units: Sequence[Unit], results: Sequence[BaseException | None], transactions: int) -> None:
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


def _settle(unit: Unit, error: StoreError | None) -> None:
    """Run the unit's ``on_done``, then wake its waiters (on the trio thread, no checkpoint)."""
    if unit.on_done is not None:
        try:
            unit.on_done(error)
        except Exception:
            log.exception("store_on_done_failed")
    unit._resolve(error)
