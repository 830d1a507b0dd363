"""Writing one batch of units: the transaction, isolation of a failing unit, retries.

The writer (``writer.py``) hands over everything pending; this module commits it in one
transaction on the writer thread, else one transaction per unit so that only the failing
unit gets the error. Transient errors (the backend's ``Conn.is_transient``: busy, locked,
I/O, disk full; a lost or restarting PostgreSQL server) are retried with backoff, logged,
and after ``retry_budget_s`` reported to the units, never dropped. The transaction helper
rolls back on any exception, so nothing is half written.

Where several daemons share the database, a ``WriteGuard`` runs inside every transaction:
before the units, it checks that each fenced thread is still leased to this node (a unit of
a thread adopted elsewhere fails with ``LeaseLost``, which the guard hears about); after
them, it tells the other nodes what was written (``NOTIFY``, delivered at commit).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import trio

from echsd.logs import get_logger
from echsd.store.conn import Conn
from echsd.store.errors import StoreUnavailable
from echsd.store.unit import Unit, apply_units

log = get_logger("echsd.store.writer")

# (the units written, each one's error or None, transactions committed); called on the trio
# thread right after the hop returned.
Finish = Callable[[Sequence[Unit], Sequence[BaseException | None], int], None]


class WriteGuard(Protocol):
    """Hooks into every write transaction (on the writer thread), and back on trio."""

    def submitted(self, unit: Unit) -> None:
        """On the trio thread, as ``unit`` is submitted: stamp it with the lease it is under."""

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


class BatchCommitter:
    """Commits batches on one connection, one hop at a time (its own capacity limiter)."""

    def __init__(
        self, conn: Conn, stats: WriterStats, *, retry_base_s: float, retry_max_s: float, retry_budget_s: float
    ) -> None:
        self.conn = conn
        self.stats = stats
        self.guard: WriteGuard | None = None  # set by the cluster (several daemons)
        self.retry_base_s = retry_base_s
        self.retry_max_s = retry_max_s
        self.retry_budget_s = retry_budget_s
        self._limiter = trio.CapacityLimiter(1)  # our own: never starved by other hops

    async def write(self, batch: list[Unit], finish: Finish) -> None:
        """Commit ``batch``: one transaction, else one per unit; retry transient errors.

        ``finish`` gets every unit exactly once, in order, with its outcome.
        """
        remaining = batch
        isolate = False
        delay = self.retry_base_s
        first_failure: float | None = None
        self.stats.largest_batch = max(self.stats.largest_batch, len(batch))
        while remaining:
            self.stats.hops += 1
            if not isolate:
                error = await trio.to_thread.run_sync(self._apply_together, remaining, limiter=self._limiter)
                if error is None:
                    finish(remaining, [None] * len(remaining), 1)
                    return
                if not self.conn.is_transient(error):
                    log.warning("store_batch_failed", units=len(remaining), error=repr(error))
                    self.stats.isolations += 1
                    isolate = True
                    continue
            else:
                results, error = await trio.to_thread.run_sync(self._apply_each, remaining, limiter=self._limiter)
                done = remaining[: len(results)]
                finish(done, results, sum(r is None for r in results))
                remaining = remaining[len(results) :]
                if error is None:
                    return
            # A transient error: back off and retry what is left, within the budget.
            now = trio.current_time()
            first_failure = now if first_failure is None else first_failure
            if now - first_failure >= self.retry_budget_s:
                log.error("store_write_gave_up", units=len(remaining), error=repr(error))
                failure = StoreUnavailable(f"store write failed after {self.retry_budget_s:.0f}s of retries (the database is out of reach): {error}")
                failure.__cause__ = error
                finish(remaining, [failure] * len(remaining), 0)
                return
            self.stats.transient_retries += 1
            log.warning("store_write_retry", units=len(remaining), error=repr(error), delay_s=delay)
            await trio.sleep(delay)
            delay = min(delay * 2, self.retry_max_s)

    # -- on the writer thread ----------------------------------------------------------

    def _apply(self, units: Sequence[Unit]) -> None:
        """One transaction: the guard's check, the units, the guard's last word."""
        guard = self.guard
        with self.conn.transaction():
            if guard is not None:
                guard.before(self.conn, units)
            apply_units(self.conn, units)
            if guard is not None:
                guard.after(self.conn, units)

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
                if self.conn.is_transient(exc):
                    return results, exc
                results.append(exc)
            else:
                results.append(None)
        return results, None
