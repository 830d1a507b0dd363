"""SQLite connections: the settings every echsd connection needs, transactions, event inserts.

One writer connection (owned by ``StoreWriter``) and a few reader connections (the store's
pool) per database file. WAL lets readers see a consistent snapshot while the writer
commits, so readers never block the writer and vice versa. ``SqliteConn`` subclasses
``apsw.Connection``: the ``Conn`` methods the store needs are added, and ``execute`` stays
apsw's own C method, so the backend-neutral code costs SQLite nothing.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Literal

import apsw
import orjson

from echsd.events import Event

BUSY_TIMEOUT_MS = 5_000

INSERT_EVENT = "INSERT INTO events(thread_id, seq, type, ts, data) VALUES(?, ?, ?, ?, ?)"

# Many events go in as ONE statement over one JSON array: a single sqlite3_step, during
# which apsw releases the GIL, instead of a step per row with a GIL hand-off each (which
# starved the writer thread while a busy trio thread held the GIL). SQLite re-renders
# each element's ``data`` byte-for-byte as orjson wrote it, and parses floats exactly.
INSERT_EVENTS_JSON = (
    "INSERT INTO events(thread_id, seq, type, ts, data) "
    "SELECT value->>0, value->>1, value->>2, value->>3, CAST(value->'$[4]' AS BLOB) "
    "FROM json_each(?)"
)
_JSON_MIN = 4  # below this, plain inserts are as cheap

# Errors that say "the disk or another process is in the way", not "this unit is wrong":
# they are retried with backoff instead of failing the unit.
TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    apsw.BusyError,
    apsw.LockedError,
    apsw.IOError,
    apsw.FullError,
)


class SqliteConn(apsw.Connection):
    """An apsw connection that is also a ``Conn`` (see ``echsd.store.conn``)."""

    dialect: Literal["sqlite"] = "sqlite"
    broken = False  # an SQLite connection never breaks the way a network one does

    def insert_events(self, events: Sequence[Event]) -> None:
        if len(events) < _JSON_MIN:
            for e in events:
                self.execute(INSERT_EVENT, (e.thread_id, e.seq, e.type, e.ts, orjson.dumps(e.data)))
            return
        payload = orjson.dumps([(e.thread_id, e.seq, e.type, e.ts, e.data) for e in events])
        self.execute(INSERT_EVENTS_JSON, (payload,))

    @contextmanager
    def transaction(self, mode: str = "IMMEDIATE") -> Iterator[None]:
        """BEGIN ... COMMIT, or ROLLBACK on any exception (including BaseException), so no
        half-written transaction ever outlives the block."""
        if self.in_transaction:  # only after a ROLLBACK that itself failed: start clean
            self._rollback()
        self.execute(f"BEGIN {mode}")
        try:
            yield
            self.execute("COMMIT")
        except BaseException:
            self._rollback()
            raise

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """A deferred read transaction: the snapshot is taken at the first read."""
        self.execute("BEGIN")
        try:
            yield
        finally:
            if self.in_transaction:
                self.execute("ROLLBACK")

    def is_transient(self, exc: BaseException) -> bool:
        return isinstance(exc, TRANSIENT_ERRORS)

    def _rollback(self) -> None:
        """Roll back if a transaction is open; a failure here must not mask the first error."""
        if not self.in_transaction:  # SQLite already rolled back (e.g. after SQLITE_FULL)
            return
        with suppress(apsw.Error):
            self.execute("ROLLBACK")


def open_writer(path: Path) -> SqliteConn:
    """The single connection that writes: WAL, synchronous=NORMAL (durable at checkpoints,
    never corrupt; a process crash loses nothing committed)."""
    conn = SqliteConn(str(path))
    conn.set_busy_timeout(BUSY_TIMEOUT_MS)
    mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
    if str(mode).lower() != "wal":
        conn.close()
        raise apsw.CantOpenError(f"cannot switch {path} to WAL mode (got {mode!r})")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA temp_store=MEMORY")
    conn.execute("PRAGMA cache_size=-16000")  # 16 MB: history pages of busy threads stay hot
    conn.execute("PRAGMA journal_size_limit=67108864")  # shrink the WAL back to 64 MB
    conn.execute("PRAGMA wal_autocheckpoint=0")  # checkpoints run off the commit path (checkpointer.py)
    return conn


def open_reader(path: Path) -> SqliteConn:
    """A connection that can only read (query_only), so a misdirected write fails loudly."""
    conn = SqliteConn(str(path), flags=apsw.SQLITE_OPEN_READWRITE)
    conn.set_busy_timeout(BUSY_TIMEOUT_MS)
    conn.execute("PRAGMA query_only=1")
    conn.execute("PRAGMA temp_store=MEMORY")
    return conn
