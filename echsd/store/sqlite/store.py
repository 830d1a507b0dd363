"""``SqliteStore``: one SQLite file (WAL), its writer, a pool of readers, its checkpointer."""

from __future__ import annotations

import os
import time
from pathlib import Path

import apsw
import trio

from echsd.logs import get_logger
from echsd.store.conn import Conn
from echsd.store.errors import StoreError
from echsd.store.sqlite.checkpointer import run_checkpoints
from echsd.store.sqlite.connection import SqliteConn, open_reader, open_writer
from echsd.store.sqlite.schema import migrate
from echsd.store.store import DEFAULT_MAX_PENDING, DEFAULT_READERS, Store

log = get_logger("echsd.store")


class SqliteStore(Store):
    """The embedded default: one daemon, one file, no set-up."""

    dialect = "sqlite"

    def __init__(self, path: Path, conn: SqliteConn, *, node_id: str, readers: int, max_pending: int) -> None:
        super().__init__(str(path), conn, node_id=node_id, readers=readers, max_pending=max_pending)
        self.path = path

    @classmethod
    def open_file(
        cls,
        path: Path,
        *,
        node_id: str = "",
        readers: int = DEFAULT_READERS,
        max_pending: int = DEFAULT_MAX_PENDING,
    ) -> SqliteStore:
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
        _check_companions(path)
        try:
            conn, version = _open_and_migrate(path)
        except apsw.NotADBError as exc:
            raise StoreError(f"{path} is not an SQLite database (or is encrypted/corrupt)") from exc
        except apsw.ReadOnlyError as exc:
            raise StoreError(f"cannot write the database {path} ({exc}): it, its directory and its -wal and -shm files must be writable") from exc
        except apsw.Error as exc:
            raise StoreError(f"cannot open the database {path}: {exc}") from exc
        log.debug("store_opened", path=str(path), schema_version=version, node_id=node_id)
        return cls(path, conn, node_id=node_id, readers=readers, max_pending=max_pending)

    async def run_background(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """WAL checkpoints, off the commit path (``checkpointer.py``)."""
        await run_checkpoints(self.path, task_status=task_status)

    def _connect_reader(self) -> Conn:
        return open_reader(self.path)

    def _close_writer(self, conn: Conn) -> None:
        assert isinstance(conn, SqliteConn)
        try:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        except apsw.Error as exc:  # readers still open elsewhere: the next open checkpoints
            log.debug("final_checkpoint_skipped", error=str(exc))
        conn.close()

    def _driver_error(self, exc: BaseException) -> bool:
        return isinstance(exc, apsw.Error)


def _check_companions(path: Path) -> None:
    """SQLite in WAL mode writes the database's ``-wal`` and ``-shm`` files too. One it
    cannot write (left by another user, made read-only or immutable) made every write fail
    after a successful start, or, mapped read-only while too short, killed the daemon with
    SIGBUS and no word: refuse to start instead, naming the file."""
    for companion in (path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        try:
            os.close(os.open(companion, os.O_RDWR | os.O_NOFOLLOW))
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise StoreError(
                f"cannot write {companion} ({exc.strerror}): SQLite must write it; fix its owner or mode, "
                "or remove it while no echsd uses the database"
            ) from exc


def _open_and_migrate(path: Path, budget_s: float = 10.0) -> tuple[SqliteConn, int]:
    """Open the writer and migrate, retrying SQLITE_BUSY; never leaks a connection.

    Switching a brand-new file to WAL (and the first migration) can fail with BUSY at once,
    without the busy handler being consulted, when several processes open it together;
    that is a moment of contention, not an error, so it is retried for ``budget_s``.
    """
    deadline = time.monotonic() + budget_s
    delay = 0.005
    while True:
        conn: SqliteConn | None = None
        try:
            conn = open_writer(path)
            version = migrate(conn, str(path))
            with conn.transaction():  # a write lock now: a file SQLite cannot write fails here, not at the first input
                pass
            return conn, version
        except BaseException as exc:
            if conn is not None:
                conn.close()
            if not isinstance(exc, apsw.BusyError) or time.monotonic() > deadline:
                raise
            time.sleep(delay)  # start-up code, before any trio task runs
            delay = min(delay * 2, 0.2)
