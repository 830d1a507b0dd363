"""WAL checkpoints, off the commit path.

SQLite's automatic checkpoint runs inside whichever commit crosses the threshold, and a
checkpoint fsyncs the database: that commit (and every event waiting to be published
behind it) stalls for milliseconds. So the writer connection never checkpoints
(``wal_autocheckpoint=0``); this task runs PASSIVE checkpoints, which never block the
writer or readers, on its own connection, twice a second. ``Store.close`` truncates the WAL.

A PASSIVE checkpoint never shrinks the WAL file, and under steady writes with readers about
it may never be reset (so ``journal_size_limit`` never applies): past ``truncate_bytes`` a
TRUNCATE checkpoint is tried instead, with a short busy timeout so it gives up rather than
hold up the writer when readers are in the way; it is tried again on the next round.
"""

from __future__ import annotations

from pathlib import Path

import apsw
import trio

from echsd.logs import get_logger
from echsd.store.sqlite.connection import BUSY_TIMEOUT_MS

log = get_logger("echsd.store")

INTERVAL_S = 0.5
TRUNCATE_BYTES = 128 * 1024 * 1024  # a WAL past this is truncated (twice the journal_size_limit)
TRUNCATE_BUSY_MS = 50


async def run_checkpoints(
    path: Path,
    interval_s: float = INTERVAL_S,
    *,
    truncate_bytes: int = TRUNCATE_BYTES,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READWRITE)
    conn.set_busy_timeout(BUSY_TIMEOUT_MS)
    wal = path.with_name(path.name + "-wal")
    task_status.started()
    try:
        while True:
            await trio.sleep(interval_s)  # a periodic timer
            try:
                await trio.to_thread.run_sync(_checkpoint, conn, _size(wal) > truncate_bytes)
            except apsw.Error as exc:  # busy or IO trouble: the next round tries again
                log.warning("wal_checkpoint_failed", error=str(exc))
    finally:
        conn.close()


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _checkpoint(conn: apsw.Connection, truncate: bool) -> None:
    if not truncate:
        conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        return
    conn.set_busy_timeout(TRUNCATE_BUSY_MS)
    try:
        busy, _frames, _done = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    finally:
        conn.set_busy_timeout(BUSY_TIMEOUT_MS)
    if busy:
        log.debug("wal_truncate_postponed: readers or the writer were busy")
