"""``Store``: the interface both backends implement, and ``Store.open`` to pick one.

A store is a database with one writer (``store.writer``, a group-committing
``StoreWriter`` on one connection) and a small pool of reader connections
(``store.read``/``read_sync``). Reads run in worker threads, each on a connection nobody
else holds, inside a snapshot, so they neither block the trio loop nor wait for the writer.

Backends: ``SqliteStore`` (one file, the embedded default) and ``PgStore`` (PostgreSQL,
shared by several daemons). Both are blocking drivers driven from worker threads: the same
model for both, so the writer's semantics (group commit, publish after commit, isolation of
a failing unit, transient retries) are one implementation, ``StoreWriter``.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar, TypeVar

import trio

from echsd.logs import get_logger
from echsd.store.conn import Conn, Dialect
from echsd.store.errors import StoreClosed, StoreError, StoreUnavailable
from echsd.store.writer import StoreWriter

T = TypeVar("T")
log = get_logger("echsd.store")

DEFAULT_READERS = 4
DEFAULT_MAX_PENDING = 50_000
SQLITE_SCHEME = "sqlite://"
POSTGRES_SCHEMES = ("postgresql://", "postgres://")


class Store(ABC):
    """One database: ``writer`` for every write, ``read``/``read_sync`` for queries.

    ``location`` names the database in messages (a path, or a URL without its password);
    ``node_id`` names this daemon among those sharing the database.
    """

    dialect: ClassVar[Dialect]

    def __init__(
        self, location: str, conn: Conn, *, node_id: str, readers: int, max_pending: int
    ) -> None:
        self.location = location
        self.node_id = node_id
        self.writer = StoreWriter(conn, max_pending=max_pending)
        self._writer_conn = conn
        self._pool_size = readers
        self._free: list[Conn] = []
        self._lock = threading.Lock()
        self._limiter = trio.CapacityLimiter(readers)
        self._closed = False

    # -- reads --------------------------------------------------------------------------

    async def read(self, fn: Callable[[Conn], T]) -> T:
        """Run ``fn(conn)`` on a pooled reader connection in a worker thread.

        ``fn`` sees one consistent snapshot (it runs inside a read transaction). A driver
        error comes out as ``StoreError`` (the driver's exception is its ``__cause__``).
        """
        self._check_open()
        return await trio.to_thread.run_sync(self._run_read, fn, limiter=self._limiter)

    def read_sync(self, fn: Callable[[Conn], T]) -> T:
        """``read`` for startup code that runs before (or outside) trio."""
        self._check_open()
        return self._run_read(fn)

    # -- lifetime ----------------------------------------------------------------------------

    @abstractmethod
    async def run_background(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """The backend's housekeeping task, started in the daemon's root nursery beside
        ``writer.run`` (SQLite: WAL checkpoints); returns at once where there is none."""

    def close(self) -> None:
        """Close every connection. Stop the writer first (``await store.writer.aclose()``)."""
        if self._closed:
            return
        self._closed = True
        with self._lock:
            idle, self._free = self._free, []
        for conn in idle:  # connections in use are closed when their read returns
            conn.close()
        self._close_writer(self._writer_conn)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- what a backend provides -------------------------------------------------------------

    @abstractmethod
    def _connect_reader(self) -> Conn:
        """A new reader connection (the pool opens them lazily)."""

    @abstractmethod
    def _close_writer(self, conn: Conn) -> None:
        """Close the writer connection (after any last housekeeping)."""

    @abstractmethod
    def _driver_error(self, exc: BaseException) -> bool:
        """True for the driver's own exceptions (wrapped into ``StoreError`` by reads)."""

    # -- the pool ----------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosed(f"the store {self.location} is closed")

    def _run_read(self, fn: Callable[[Conn], T]) -> T:
        """``fn`` on a reader; a pooled connection the server dropped meanwhile (a database
        restart) is replaced once, so only a database that is really away fails the read."""
        fresh = False
        while True:
            conn, fresh = self._acquire(fresh)
            try:
                with conn.snapshot():
                    return fn(conn)
            except Exception as exc:
                if not self._driver_error(exc):
                    raise
                if self._unreachable(exc) and conn.broken and not fresh:
                    fresh = True
                    continue
                raise self._read_error(f"store read failed ({self.location})", exc) from exc
            finally:
                self._release(conn)

    def _acquire(self, fresh: bool) -> tuple[Conn, bool]:
        """A reader, and whether it is new (``fresh``: never one from the pool)."""
        if not fresh:
            with self._lock:
                if self._free:
                    return self._free.pop(), False
        try:
            return self._connect_reader(), True  # lazily: most processes need one or two
        except Exception as exc:
            if self._driver_error(exc):
                raise self._read_error(f"cannot open a reader on {self.location}", exc) from exc
            raise

    def _read_error(self, what: str, exc: BaseException) -> StoreError:
        if self._unreachable(exc):
            return StoreUnavailable(f"{what}: {first_line(exc)}; the database is out of reach, try again in a few seconds")
        return StoreError(f"{what}: {first_line(exc)}")

    def _unreachable(self, exc: BaseException) -> bool:
        """True for a driver error that means the database server is away (not the query)."""
        return False

    def _release(self, conn: Conn) -> None:
        if not conn.broken:
            with self._lock:
                if not self._closed and len(self._free) < self._pool_size:
                    self._free.append(conn)
                    return
        conn.close()


def sqlite_path(url: str) -> Path:
    """The file of ``sqlite:///PATH``: ``sqlite:////abs/echsd.db`` is absolute, a relative
    PATH is taken from the working directory (settings resolve it against the state dir
    first), ``~`` expands."""
    path = url[len(SQLITE_SCHEME) :]
    if not path.startswith("/") or path in ("/", "/:memory:"):
        raise StoreError(f"invalid store URL {url!r}: expected sqlite:///PATH (a database file)")
    return Path(path[1:]).expanduser().absolute()


def first_line(exc: BaseException) -> str:
    """A driver's message without the detail lines libpq appends (HINT, context...)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
