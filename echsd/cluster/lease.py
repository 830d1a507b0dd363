"""The node's lease, renewed from an OS thread of its own.

A node's lease must not depend on its event loop being free: work that held the loop past
a lease (a bug, a huge model output) cost the node every thread it ran, taken over by
another node mid-turn. ``LeaseKeeper`` renews every ``lease_s / 3`` from a daemon thread, on
a connection of its own (neither the loop nor the other membership queries can delay it),
and tells the loop only what it must act on: the lease was lost (another node adopted this
incarnation), which the loop learns through the trio token. The loop reads ``silent_s``
to stop its threads when renewals have failed for a whole lease (fencing, as before).
"""

from __future__ import annotations

import threading
import time
from typing import Callable

import trio

from echsd.cluster import nodes
from echsd.logs import get_logger
from echsd.store.postgres.connection import PgConn
from echsd.threads.lease import Lease

log = get_logger(__name__)

STOP_WAIT_S = 2.0


class LeaseKeeper:
    def __init__(self, url: str, application_name: str, node_id: str, lease: Lease, lease_s: float, on_lost: Callable[[], None]) -> None:
        self._url = url
        self._application_name = application_name
        self.node_id = node_id
        self.lease = lease  # read here, from the keeper's thread; the cluster node changes it
        self.lease_s = lease_s
        self._on_lost = on_lost  # called on the event loop
        self._reported: int | None = None  # the epoch whose loss was reported already
        self._renewed_at = time.monotonic()
        self.failure: str | None = None  # why the last renewal failed, None after a success
        self._wake = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._token: trio.lowlevel.TrioToken | None = None

    def joined(self) -> None:
        """A (re)join registered a new epoch just now: it counts as renewed."""
        self._renewed_at = time.monotonic()
        self.failure = None

    def silent_s(self) -> float:
        """Seconds since the lease was last known to be held."""
        return time.monotonic() - self._renewed_at

    def start(self) -> None:
        """Start renewing (on the event loop: the loss is reported to it)."""
        self._token = trio.lowlevel.current_trio_token()
        self._thread = threading.Thread(target=self._run, name=f"echsd lease {self.node_id}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join(STOP_WAIT_S)

    def _run(self) -> None:
        conn: PgConn | None = None
        try:
            while not self._stopping:
                self._wake.wait(self.lease_s / 3)
                if self._stopping:
                    return
                epoch = self.lease.epoch
                if epoch is None or epoch == self._reported:
                    continue  # nothing to renew (not joined, or lost and not joined again)
                try:
                    if conn is None:
                        conn = PgConn(self._url, self._application_name)
                    held = nodes.renew(conn, self.node_id, epoch, self.lease_s)
                except Exception as exc:
                    self.failure = repr(exc)
                    log.warning("cluster_renew_failed", error=self.failure, silent_s=round(self.silent_s(), 1))
                    continue
                if epoch != self.lease.epoch:
                    continue  # the node joined again meanwhile
                self.failure = None
                if held:
                    self._renewed_at = time.monotonic()
                else:
                    self._reported = epoch
                    self._report_lost()
        finally:
            if conn is not None:
                conn.close()

    def _report_lost(self) -> None:
        assert self._token is not None
        try:
            self._token.run_sync_soon(self._on_lost)
        except trio.RunFinishedError:
            pass  # the daemon is gone: nothing runs under the lease any more
