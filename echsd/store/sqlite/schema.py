"""Applying the migrations (``echsd.store.schema``) to an SQLite file.

The file is marked as ours by ``PRAGMA application_id``, so another application's SQLite
file is refused instead of being written into.
"""

from __future__ import annotations

from echsd.logs import get_logger
from echsd.store.errors import StoreError
from echsd.store.schema import (
    APPLICATION_ID,
    LATEST_VERSION,
    SCHEMA_VERSION_TABLE,
    apply_next,
    recorded_version,
    refuse_newer,
    warn_edited,
)
from echsd.store.sqlite.connection import SqliteConn

log = get_logger("echsd.store")


def current_version(conn: SqliteConn) -> int:
    """The schema version of ``conn``'s database; 0 for a fresh file."""
    if not conn.table_exists(None, "schema_version"):
        return 0
    return recorded_version(conn)


def migrate(conn: SqliteConn, path: str = "") -> int:
    """Bring the database up to ``LATEST_VERSION``; returns the version reached.

    Each migration runs in its own IMMEDIATE transaction that re-reads the version first,
    so two processes opening the same fresh file cannot apply a migration twice.
    """
    _check_application_id(conn, path)
    conn.execute(SCHEMA_VERSION_TABLE["sqlite"])
    version = current_version(conn)
    refuse_newer(version, path)
    warn_edited(conn, path)
    while version < LATEST_VERSION:
        with conn.transaction():
            version = current_version(conn)
            refuse_newer(version, path)
            if version >= LATEST_VERSION:
                break
            apply_next(conn, version)
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        version += 1
        log.info("store_migrated", path=path, version=version)
    return version


def _check_application_id(conn: SqliteConn, path: str) -> None:
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    if app_id not in (0, APPLICATION_ID):
        raise StoreError(f"{path}: not an echsd database (application_id {app_id:#x})")
