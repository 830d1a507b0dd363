"""The database schema as an ordered list of migrations, in both SQL dialects.

Rules: ``MIGRATIONS[i]`` brings the schema from version ``i`` to ``i + 1``, with one script
per dialect that builds the same tables, columns, keys and indexes. A migration is never
edited once released (its sha256 is recorded when applied and a mismatch is logged);
changes go into a new migration appended at the end. A database whose version is higher
than ``len(MIGRATIONS)`` was written by a newer echsd and is refused rather than guessed at.
How a backend applies them (locking, marking the database as ours) lives with the backend:
``sqlite/schema.py``, ``postgres/schema.py``.

Dialect notes (PostgreSQL beside SQLite): REAL is DOUBLE PRECISION and INTEGER is BIGINT
(SQLite's are 64-bit), event data is BYTEA (SQLite: BLOB; both hold orjson's bytes as
written), and key columns are ``COLLATE "C"`` so that ORDER BY and range scans order
bytewise as SQLite's BINARY collation does (``list_blackboard`` relies on it).
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

from echsd.logs import get_logger
from echsd.store.conn import Conn, Dialect
from echsd.store.errors import StoreError

log = get_logger("echsd.store")

# "echs" in ASCII: marks a database as ours (SQLite's application_id; PostgreSQL's
# advisory lock key for migrations).
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


_PG_V1 = """
CREATE TABLE threads(
    thread_id   TEXT COLLATE "C" PRIMARY KEY,
    parent      TEXT COLLATE "C",
    created_at  DOUBLE PRECISION NOT NULL,
    state       TEXT NOT NULL,
    config      TEXT NOT NULL DEFAULT '{}',
    usage       TEXT NOT NULL DEFAULT '{}',
    active_turn TEXT,
    extra       TEXT NOT NULL DEFAULT '{}',
    updated_at  DOUBLE PRECISION NOT NULL
);
CREATE INDEX threads_parent ON threads(parent) WHERE parent IS NOT NULL;

CREATE TABLE items(
    thread_id TEXT COLLATE "C" NOT NULL,
    pos       BIGINT NOT NULL,
    item      TEXT NOT NULL,
    turn_id   TEXT,
    PRIMARY KEY(thread_id, pos)
);

CREATE TABLE inputs(
    input_id      TEXT COLLATE "C" PRIMARY KEY,
    thread_id     TEXT COLLATE "C" NOT NULL,
    client_msg_id TEXT COLLATE "C",
    mode          TEXT NOT NULL,
    text          TEXT NOT NULL,
    attachments   TEXT NOT NULL DEFAULT '[]',
    status        TEXT NOT NULL CHECK(status IN ('queued', 'steering', 'delivered', 'dropped')),
    position      BIGINT NOT NULL,
    created_at    DOUBLE PRECISION NOT NULL,
    turn_id       TEXT,
    reason        TEXT
);
CREATE UNIQUE INDEX inputs_client_msg ON inputs(thread_id, client_msg_id)
    WHERE client_msg_id IS NOT NULL;
CREATE INDEX inputs_pending ON inputs(thread_id, status, position);

CREATE TABLE events(
    thread_id TEXT COLLATE "C" NOT NULL,
    seq       BIGINT NOT NULL,
    type      TEXT NOT NULL,
    ts        DOUBLE PRECISION NOT NULL,
    data      BYTEA NOT NULL,
    PRIMARY KEY(thread_id, seq)
);
CREATE INDEX events_deltas ON events(thread_id, seq)
    WHERE type IN ('tool.output', 'turn.delta', 'turn.reasoning_delta');

CREATE TABLE event_gaps(
    thread_id TEXT COLLATE "C" NOT NULL,
    from_seq  BIGINT NOT NULL,
    to_seq    BIGINT NOT NULL,
    reason    TEXT NOT NULL,
    ts        DOUBLE PRECISION NOT NULL DEFAULT 0,
    PRIMARY KEY(thread_id, from_seq)
);
CREATE INDEX event_gaps_to ON event_gaps(thread_id, to_seq);

CREATE TABLE blackboard(
    key        TEXT COLLATE "C" PRIMARY KEY,
    value      TEXT NOT NULL,
    version    BIGINT NOT NULL,
    writer     TEXT,
    updated_at DOUBLE PRECISION NOT NULL
);

CREATE TABLE meta(
    key   TEXT COLLATE "C" PRIMARY KEY,
    value TEXT
);
"""

_PG_V2 = """
ALTER TABLE inputs ADD COLUMN disposition TEXT;
"""

# v3: the blackboard keeps deleted keys as tombstones (so a key's version never goes back,
# across a delete and re-create) and logs every change under its own seq, for watchers to
# replay (``subscribe {blackboard}``); the log keeps the newest changes (retention).
_V3 = """
ALTER TABLE blackboard ADD COLUMN deleted INTEGER NOT NULL DEFAULT 0;
CREATE TABLE blackboard_log(
    seq        INTEGER PRIMARY KEY,
    key        TEXT NOT NULL,
    value      TEXT,
    version    INTEGER NOT NULL,
    writer     TEXT,
    updated_at REAL NOT NULL,
    deleted    INTEGER NOT NULL DEFAULT 0
);
"""

_PG_V3 = """
ALTER TABLE blackboard ADD COLUMN deleted INTEGER NOT NULL DEFAULT 0;
CREATE TABLE blackboard_log(
    seq        BIGINT PRIMARY KEY,
    key        TEXT COLLATE "C" NOT NULL,
    value      TEXT,
    version    BIGINT NOT NULL,
    writer     TEXT,
    updated_at DOUBLE PRECISION NOT NULL,
    deleted    INTEGER NOT NULL DEFAULT 0
);
"""


# v4: several daemons over one database (PostgreSQL). A node registers an incarnation (a
# globally increasing number) under a lease renewed by heartbeats and judged by the
# database's clock; a thread row names the node that runs it and the incarnation it runs
# under (``lease_epoch``), which every write of that thread is checked against (fencing).
# ``requests`` carries operations for threads run by another node, and their answers.
_V4 = """
ALTER TABLE threads ADD COLUMN owner_node TEXT;
ALTER TABLE threads ADD COLUMN lease_epoch INTEGER;
CREATE INDEX threads_epoch ON threads(lease_epoch);
CREATE TABLE nodes(
    node_id     TEXT PRIMARY KEY,
    incarnation INTEGER NOT NULL,
    started_at  REAL NOT NULL,
    expires_at  REAL NOT NULL,
    address     TEXT NOT NULL DEFAULT ''
);
CREATE TABLE requests(
    request_id TEXT PRIMARY KEY,
    target     TEXT NOT NULL,
    origin     TEXT NOT NULL,
    thread_id  TEXT,
    op         TEXT NOT NULL,
    params     TEXT NOT NULL,
    created_at REAL NOT NULL,
    answer     TEXT
);
CREATE INDEX requests_target ON requests(target) WHERE answer IS NULL;
"""

_PG_V4 = """
ALTER TABLE threads ADD COLUMN owner_node TEXT COLLATE "C";
ALTER TABLE threads ADD COLUMN lease_epoch BIGINT;
CREATE INDEX threads_epoch ON threads(lease_epoch);
CREATE SEQUENCE node_incarnations;
CREATE TABLE nodes(
    node_id     TEXT COLLATE "C" PRIMARY KEY,
    incarnation BIGINT NOT NULL,
    started_at  DOUBLE PRECISION NOT NULL,
    expires_at  DOUBLE PRECISION NOT NULL,
    address     TEXT NOT NULL DEFAULT ''
);
CREATE TABLE requests(
    request_id TEXT COLLATE "C" PRIMARY KEY,
    target     TEXT COLLATE "C" NOT NULL,
    origin     TEXT COLLATE "C" NOT NULL,
    thread_id  TEXT COLLATE "C",
    op         TEXT NOT NULL,
    params     TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    answer     TEXT
);
CREATE INDEX requests_target ON requests(target) WHERE answer IS NULL;
"""


@dataclass(frozen=True, slots=True)
class Migration:
    """One schema step, spelled in each dialect."""

    sqlite: str
    postgresql: str

    def script(self, dialect: Dialect) -> str:
        return self.sqlite if dialect == "sqlite" else self.postgresql


MIGRATIONS: tuple[Migration, ...] = (
    Migration(sqlite=_V1, postgresql=_PG_V1),
    Migration(sqlite=_V2, postgresql=_PG_V2),
    Migration(sqlite=_V3, postgresql=_PG_V3),
    Migration(sqlite=_V4, postgresql=_PG_V4),
)
"""Append only. Index i holds the scripts that move version i to i + 1."""

LATEST_VERSION = len(MIGRATIONS)

INDEXED_DELTA_TYPES = ("tool.output", "turn.delta", "turn.reasoning_delta")
"""The types ``events_deltas`` covers; its WHERE term, written as ``DELTA_PREDICATE``."""

DELTA_PREDICATE = "type IN ('tool.output', 'turn.delta', 'turn.reasoning_delta')"
"""Spelled exactly as in the index: SQLite uses a partial index only for the same term."""

SCHEMA_VERSION_TABLE = {
    "sqlite": "CREATE TABLE IF NOT EXISTS schema_version("
    "version INTEGER PRIMARY KEY, applied_at REAL NOT NULL, sha256 TEXT NOT NULL)",
    "postgresql": "CREATE TABLE IF NOT EXISTS schema_version("
    "version INTEGER PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL, sha256 TEXT NOT NULL)",
}


def script_digest(script: str) -> str:
    return hashlib.sha256(script.encode()).hexdigest()


def recorded_version(conn: Conn) -> int:
    """The highest version in ``schema_version`` (which must exist); 0 if none."""
    row = conn.execute("SELECT max(version) FROM schema_version").fetchone()
    return int(row[0] or 0) if row else 0


def apply_next(conn: Conn, version: int) -> None:
    """Run migration ``version`` -> ``version + 1`` and record it (in the caller's transaction)."""
    script = MIGRATIONS[version].script(conn.dialect)
    conn.execute(script)
    conn.execute(
        "INSERT INTO schema_version(version, applied_at, sha256) VALUES(?, ?, ?)",
        (version + 1, time.time(), script_digest(script)),
    )


def refuse_newer(version: int, where: str) -> None:
    if version > LATEST_VERSION:
        raise StoreError(
            f"{where}: database schema version {version} is newer than this echsd "
            f"understands ({LATEST_VERSION}); upgrade echsd or use another store"
        )


def warn_edited(conn: Conn, where: str) -> None:
    for version, digest in conn.execute("SELECT version, sha256 FROM schema_version").fetchall():
        expected = script_digest(MIGRATIONS[version - 1].script(conn.dialect)) if 1 <= version <= LATEST_VERSION else digest
        if digest != expected:
            log.warning("store_migration_edited", store=where, version=version)
