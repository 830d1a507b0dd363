"""``Store``: the database file, its writer and a small pool of reader connections.

Reads run in worker threads on their own connections (WAL snapshots), so they neither
block the trio loop nor wait for the writer. A connection is used by one OS thread at a
time: the pool hands each call a connection nobody else holds.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import apsw
import trio

from echsd.logs import get_logger
from echsd.store.connection import open_reader, open_writer
from echsd.store.errors import StoreClosed, StoreError
from echsd.store.schema import migrate
from echsd.store.writer import StoreWriter

T = TypeVar("T")
log = get_logger("echsd.store")

DEFAULT_READERS = 4


class Store:
    """One SQLite file: ``writer`` for every write, ``read``/``read_sync`` for queries."""

    def __init__(
        self, path: Path, conn: apsw.Connection, writer: StoreWriter, readers: int
    ) -> None:
        self.path = path
        self.writer = writer
        self._writer_conn = conn
        self._pool_size = readers
        self._free: list[apsw.Connection] = []
        self._lock = threading.Lock()
        self._limiter = trio.CapacityLimiter(readers)
        self._closed = False

    @classmethod
    def open(
        cls, path: Path, *, readers: int = DEFAULT_READERS, max_pending: int = 50_000
    ) -> Store:
        """Open (creating if needed) and migrate the database at ``path``.

        Raises ``StoreError`` with a message naming the file when it is not an SQLite
        database, not ours, written by a newer echsd, or cannot be opened.
        """
        path = Path(path).expanduser()
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the state directory {path.parent}: {exc}") from exc
        try:
            # Conversations are private: create the file 0600 (SQLite gives its -wal and
            # -shm files the database's mode), and tighten an existing one.
            os.close(os.open(path, os.O_CREAT | os.O_RDWR, 0o600))
            os.chmod(path, 0o600)
        except OSError as exc:
            raise StoreError(f"cannot create the database {path}: {exc.strerror}") from exc
        conn: apsw.Connection | None = None
        try:
            conn, version = _open_and_migrate(path)
        except StoreError:
            if conn is not None:
                conn.close()
            raise
        except apsw.NotADBError as exc:
            if conn is not None:
                conn.close()
            raise StoreError(f"{path} is not an SQLite database (or is encrypted/corrupt)") from exc
        except apsw.Error as exc:
            if conn is not None:
                conn.close()
            raise StoreError(f"cannot open the database {path}: {exc}") from exc
        log.debug("store_opened", path=str(path), schema_version=version)
        return cls(path, conn, StoreWriter(conn, max_pending=max_pending), readers)

    async def read(self, fn: Callable[[apsw.Connection], T]) -> T:
        """Run ``fn(conn)`` on a pooled reader connection in a worker thread.

        ``fn`` sees one consistent snapshot (it runs inside a read transaction).
        """
        self._check_open()
        return await trio.to_thread.run_sync(self._run_read, fn, limiter=self._limiter)

    def read_sync(self, fn: Callable[[apsw.Connection], T]) -> T:
        """``read`` for startup code that runs before (or outside) trio."""
        self._check_open()
        return self._run_read(fn)

    def close(self) -> None:
        """Close every connection. Stop the writer first (``await store.writer.aclose()``)."""
        if self._closed:
            return
        self._closed = True
        with self._lock:
            idle, self._free = self._free, []
        for conn in idle:  # connections in use are closed when their read returns
            conn.close()
        try:
            self._writer_conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        except apsw.Error as exc:  # readers still open elsewhere: the next open checkpoints
            log.debug("final_checkpoint_skipped", error=str(exc))
        self._writer_conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosed(f"the store {self.path} is closed")

    def _run_read(self, fn: Callable[[apsw.Connection], T]) -> T:
        conn = self._acquire()
        try:
            conn.execute("BEGIN")
            try:
                return fn(conn)
            finally:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
        finally:
            self._release(conn)

    def _acquire(self) -> apsw.Connection:
        with self._lock:
            if self._free:
                return self._free.pop()
        return open_reader(self.path)  # lazily: most processes need one or two

    def _release(self, conn: apsw.Connection) -> None:
        with self._lock:
            if not self._closed and len(self._free) < self._pool_size:
                self._free.append(conn)
                return
        conn.close()


def _open_and_migrate(path: Path, budget_s: float = 10.0) -> tuple[apsw.Connection, int]:
    """Open the writer and migrate, retrying SQLITE_BUSY.

    Switching a brand-new file to WAL (and the first migration) can fail with BUSY at once,
    without the busy handler being consulted, when several processes open it together;
    that is a moment of contention, not an error, so it is retried for ``budget_s``.
    """
    deadline = time.monotonic() + budget_s
    delay = 0.005
    while True:
        conn: apsw.Connection | None = None
        try:
            conn = open_writer(path)
            return conn, migrate(conn, str(path))
        except apsw.BusyError:
            if conn is not None:
                conn.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(delay)  # start-up code, before any trio task runs
            delay = min(delay * 2, 0.2)
