"""WAL checkpoints, off the commit path.

SQLite's automatic checkpoint runs inside whichever commit crosses the threshold, and a
checkpoint fsyncs the database: that commit (and every event waiting to be published
behind it) stalls for milliseconds. So the writer connection never checkpoints
(``wal_autocheckpoint=0``); this task runs PASSIVE checkpoints, which never block the
writer or readers, on its own connection, twice a second. ``Store.close`` truncates the WAL.
"""

from __future__ import annotations

from pathlib import Path

import apsw
import trio

from echsd.logs import get_logger
from echsd.store.sqlite.connection import BUSY_TIMEOUT_MS

log = get_logger("echsd.store")

INTERVAL_S = 0.5


async def run_checkpoints(path: Path, interval_s: float = INTERVAL_S, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READWRITE)
    conn.set_busy_timeout(BUSY_TIMEOUT_MS)
    task_status.started()
    try:
        while True:
            await trio.sleep(interval_s)  # a periodic timer
            try:
                await trio.to_thread.run_sync(_checkpoint, conn)
            except apsw.Error as exc:  # busy or IO trouble: the next round tries again
                log.warning("wal_checkpoint_failed", error=str(exc))
    finally:
        conn.close()


def _checkpoint(conn: apsw.Connection) -> None:
    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
