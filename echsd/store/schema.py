"""The database schema as an ordered list of migrations.

Rules: ``MIGRATIONS[i]`` brings the schema from version ``i`` to ``i + 1``. A migration is
never edited once released (its sha256 is recorded when applied and a mismatch is logged);
changes go into a new migration appended at the end. A database whose version is higher
than ``len(MIGRATIONS)`` was written by a newer echsd and is refused rather than guessed at.
"""

from __future__ import annotations

import hashlib
import time

import apsw

from echsd.logs import get_logger
from echsd.store.connection import transaction
from echsd.store.errors import StoreError

log = get_logger("echsd.store")

# "echs" in ASCII: marks the file as ours so another application's SQLite file is refused.
APPLICATION_ID = 0x65636873

_V1 = """
CREATE TABLE threads(
    thread_id   TEXT PRIMARY KEY,
    parent      TEXT,
    created_at  REAL NOT NULL,
    state       TEXT NOT NULL,
    config      TEXT NOT NULL DEFAULT '{}',
    usage       TEXT NOT NULL DEFAULT '{}',
    active_turn TEXT,
    extra       TEXT NOT NULL DEFAULT '{}',
    updated_at  REAL NOT NULL
);
CREATE INDEX threads_parent ON threads(parent) WHERE parent IS NOT NULL;

-- The thread's Responses history, one row per item, positions 0..n-1.
CREATE TABLE items(
    thread_id TEXT NOT NULL,
    pos       INTEGER NOT NULL,
    item      TEXT NOT NULL,
    turn_id   TEXT,
    PRIMARY KEY(thread_id, pos)
) WITHOUT ROWID;

CREATE TABLE inputs(
    input_id      TEXT PRIMARY KEY,
    thread_id     TEXT NOT NULL,
    client_msg_id TEXT,
    mode          TEXT NOT NULL,
    text          TEXT NOT NULL,
    attachments   TEXT NOT NULL DEFAULT '[]',
    status        TEXT NOT NULL CHECK(status IN ('queued', 'steering', 'delivered', 'dropped')),
    position      INTEGER NOT NULL,
    created_at    REAL NOT NULL,
    turn_id       TEXT,
    reason        TEXT
);
CREATE UNIQUE INDEX inputs_client_msg ON inputs(thread_id, client_msg_id)
    WHERE client_msg_id IS NOT NULL;
CREATE INDEX inputs_pending ON inputs(thread_id, status, position);

-- The durable event log: data is orjson bytes. No secondary index, to keep appends cheap.
CREATE TABLE events(
    thread_id TEXT NOT NULL,
    seq       INTEGER NOT NULL,
    type      TEXT NOT NULL,
    ts        REAL NOT NULL,
    data      BLOB NOT NULL,
    PRIMARY KEY(thread_id, seq)
) WITHOUT ROWID;

-- Retention (fold_deltas) finds a thread's delta events through this partial index, so
-- folding costs O(deltas kept), not O(the thread's whole log); non-delta events skip it.
CREATE INDEX events_deltas ON events(thread_id, seq)
    WHERE type IN ('tool.output', 'turn.delta', 'turn.reasoning_delta');

-- Seq ranges [from_seq, to_seq] deleted by retention; ts is the time of the last event
-- in the range, so gaps sort among events by time (read_events_all).
CREATE TABLE event_gaps(
    thread_id TEXT NOT NULL,
    from_seq  INTEGER NOT NULL,
    to_seq    INTEGER NOT NULL,
    reason    TEXT NOT NULL,
    ts        REAL NOT NULL DEFAULT 0,
    PRIMARY KEY(thread_id, from_seq)
) WITHOUT ROWID;
CREATE INDEX event_gaps_to ON event_gaps(thread_id, to_seq);

CREATE TABLE blackboard(
    key        TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    version    INTEGER NOT NULL,
    writer     TEXT,
    updated_at REAL NOT NULL
);

CREATE TABLE meta(
    key   TEXT PRIMARY KEY,
    value TEXT
);
"""

# v2: what an input's acknowledgement said (started | queued | steered), so a repeated
# client_msg_id is acknowledged exactly as the first time, across restarts.
_V2 = """
ALTER TABLE inputs ADD COLUMN disposition TEXT;
"""

MIGRATIONS: tuple[str, ...] = (_V1, _V2)
"""Append only. Index i holds the script that moves version i to i + 1."""

LATEST_VERSION = len(MIGRATIONS)

INDEXED_DELTA_TYPES = ("tool.output", "turn.delta", "turn.reasoning_delta")
"""The types ``events_deltas`` covers; its WHERE term, written as ``DELTA_PREDICATE``."""

DELTA_PREDICATE = "type IN ('tool.output', 'turn.delta', 'turn.reasoning_delta')"
"""Spelled exactly as in the index: SQLite uses a partial index only for the same term."""


def script_digest(script: str) -> str:
    return hashlib.sha256(script.encode()).hexdigest()


def current_version(conn: apsw.Connection) -> int:
    """The schema version of ``conn``'s database; 0 for a fresh file."""
    if not conn.table_exists(None, "schema_version"):
        return 0
    row = conn.execute("SELECT max(version) FROM schema_version").fetchone()
    return int(row[0] or 0) if row else 0


def migrate(conn: apsw.Connection, path: str = "") -> int:
    """Bring the database up to ``LATEST_VERSION``; returns the version reached.

    Each migration runs in its own IMMEDIATE transaction that re-reads the version first,
    so two processes opening the same fresh file cannot apply a migration twice.
    """
    _check_application_id(conn, path)
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_version("
        "version INTEGER PRIMARY KEY, applied_at REAL NOT NULL, sha256 TEXT NOT NULL)"
    )
    version = current_version(conn)
    _refuse_newer(version, path)
    _warn_edited(conn, path)
    while version < LATEST_VERSION:
        with transaction(conn):
            version = current_version(conn)
            _refuse_newer(version, path)
            if version >= LATEST_VERSION:
                break
            script = MIGRATIONS[version]
            conn.execute(script)
            conn.execute(
                "INSERT INTO schema_version(version, applied_at, sha256) VALUES(?, ?, ?)",
                (version + 1, time.time(), script_digest(script)),
            )
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        version += 1
        log.info("store_migrated", path=path, version=version)
    return version


def _check_application_id(conn: apsw.Connection, path: str) -> None:
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    if app_id not in (0, APPLICATION_ID):
        raise StoreError(f"{path}: not an echsd database (application_id {app_id:#x})")


def _refuse_newer(version: int, path: str) -> None:
    if version > LATEST_VERSION:
        raise StoreError(
            f"{path}: database schema version {version} is newer than this echsd "
            f"understands ({LATEST_VERSION}); upgrade echsd or use another state dir"
        )


def _warn_edited(conn: apsw.Connection, path: str) -> None:
    for version, digest in conn.execute("SELECT version, sha256 FROM schema_version"):
        if 1 <= version <= LATEST_VERSION and digest != script_digest(MIGRATIONS[version - 1]):
            log.warning("store_migration_edited", path=path, version=version)
