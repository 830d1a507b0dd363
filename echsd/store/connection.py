"""Opening connections with the settings every echsd connection needs, and transactions.

One writer connection (owned by ``StoreWriter``) and a few reader connections
(``ReaderPool``) per database file. WAL lets readers see a consistent snapshot while the
writer commits, so readers never block the writer and vice versa.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import apsw

BUSY_TIMEOUT_MS = 5_000


def open_writer(path: Path) -> apsw.Connection:
    """The single connection that writes: WAL, synchronous=NORMAL (durable at checkpoints,
    never corrupt; a process crash loses nothing committed)."""
    conn = apsw.Connection(str(path))
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


def open_reader(path: Path) -> apsw.Connection:
    """A connection that can only read (query_only), so a misdirected write fails loudly."""
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READWRITE)
    conn.set_busy_timeout(BUSY_TIMEOUT_MS)
    conn.execute("PRAGMA query_only=1")
    conn.execute("PRAGMA temp_store=MEMORY")
    return conn


@contextmanager
def transaction(conn: apsw.Connection, mode: str = "IMMEDIATE") -> Iterator[None]:
    """BEGIN ... COMMIT, or ROLLBACK on any exception (including BaseException), so no
    half-written transaction ever outlives the block."""
    if conn.in_transaction:  # only after a ROLLBACK that itself failed: start clean
        _rollback(conn)
    conn.execute(f"BEGIN {mode}")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        _rollback(conn)
        raise


def _rollback(conn: apsw.Connection) -> None:
    """Roll back if a transaction is open; a failure here must not mask the first error."""
    if not conn.in_transaction:  # SQLite already rolled back (e.g. after SQLITE_FULL)
        return
    with suppress(apsw.Error):
        conn.execute("ROLLBACK")
