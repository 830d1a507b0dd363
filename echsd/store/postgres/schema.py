"""Applying the migrations (``echsd.store.schema``) to a PostgreSQL database.

Several daemons may start at once against one database: the whole migration runs in one
transaction under a transaction-scoped advisory lock, so exactly one of them applies each
step and the others find it done. DDL is transactional in PostgreSQL, so a failed step
leaves nothing half-built. A database (schema) that already holds tables but no
``schema_version`` belongs to something else and is refused instead of being written into.
"""

from __future__ import annotations

from echsd.logs import get_logger
from echsd.store.errors import StoreError
from echsd.store.postgres.connection import PgConn
from echsd.store.schema import (
    APPLICATION_ID,
    LATEST_VERSION,
    SCHEMA_VERSION_TABLE,
    apply_next,
    recorded_version,
    refuse_newer,
    warn_edited,
)

log = get_logger("echsd.store")


def migrate(conn: PgConn, where: str) -> int:
    """Bring the database up to ``LATEST_VERSION``; returns the version reached."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(?)", (APPLICATION_ID,))
        _check_ours(conn, where)
        conn.execute(SCHEMA_VERSION_TABLE["postgresql"])
        version = recorded_version(conn)
        refuse_newer(version, where)
        warn_edited(conn, where)
        while version < LATEST_VERSION:
            apply_next(conn, version)
            version += 1
            log.info("store_migrated", store=where, version=version)
    return version


def _check_ours(conn: PgConn, where: str) -> None:
    tables = [
        row[0]
        for row in conn.execute(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = current_schema() ORDER BY table_name"
        )
    ]
    if tables and "schema_version" not in tables:
        shown = ", ".join(tables[:5]) + (", ..." if len(tables) > 5 else "")
        raise StoreError(
            f"{where}: not an echsd database (its schema holds other tables: {shown}); "
            "use an empty database or schema"
        )
