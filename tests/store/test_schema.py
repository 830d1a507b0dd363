"""Opening: directory creation, WAL, migrations applied once, refusal of foreign files."""

from __future__ import annotations

import stat
import threading
from pathlib import Path

import apsw
import pytest

from echsd.events import DELTA_EVENTS
from echsd.store import LATEST_VERSION, MIGRATIONS, Store, StoreError, queries
from echsd.store.schema import APPLICATION_ID, DELTA_PREDICATE, INDEXED_DELTA_TYPES, script_digest

# Migrations are never edited once released: if this fails, add a new migration instead.
PINNED_DIGESTS = {
    1: "82f1dcf9cc253ba714a5a955ae8d92354e6060f1f0e14c1af48f914a124ab8bb",
    2: "2d0c0764aafaafa8a4dd84b17349030a4e2775be0c97291790b6638835c7b5c0",
}


def _versions(path: Path) -> list[tuple[int, str]]:
    conn = apsw.Connection(str(path))
    try:
        return list(conn.execute("SELECT version, sha256 FROM schema_version ORDER BY version"))
    finally:
        conn.close()


def test_open_creates_private_dir_wal_and_schema(db_path: Path) -> None:
    with Store.open(db_path) as store:
        assert store.path == db_path
        assert stat.S_IMODE(db_path.parent.stat().st_mode) == 0o700
        mode = store.read_sync(lambda c: c.execute("PRAGMA journal_mode").fetchone()[0])
        assert mode == "wal"
        tables = store.read_sync(
            lambda c: {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        )
    assert {"threads", "items", "inputs", "events", "event_gaps", "blackboard", "meta"} <= tables
    assert [v for v, _ in _versions(db_path)] == list(range(1, LATEST_VERSION + 1))


def test_migrations_apply_once_and_reopen_is_idempotent(db_path: Path) -> None:
    Store.open(db_path).close()
    first = _versions(db_path)
    for _ in range(3):
        with Store.open(db_path) as store:
            assert store.read_sync(queries.integrity_check) == "ok"
    assert _versions(db_path) == first
    assert len(first) == LATEST_VERSION


def test_released_migrations_are_never_edited() -> None:
    for version, digest in PINNED_DIGESTS.items():
        assert script_digest(MIGRATIONS[version - 1]) == digest, f"migration {version} was edited"


def test_newer_schema_is_refused(db_path: Path) -> None:
    Store.open(db_path).close()
    conn = apsw.Connection(str(db_path))
    conn.execute("INSERT INTO schema_version VALUES(?, 0, 'x')", (LATEST_VERSION + 1,))
    conn.close()
    with pytest.raises(StoreError, match="newer"):
        Store.open(db_path)


def test_garbage_file_is_refused(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    db_path.write_bytes(b"this is not a database at all, just text\n" * 100)
    with pytest.raises(StoreError, match="not an SQLite database"):
        Store.open(db_path)


def test_another_applications_database_is_refused(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    conn = apsw.Connection(str(db_path))
    conn.execute("PRAGMA application_id = 1234; CREATE TABLE t(x)")
    conn.close()
    with pytest.raises(StoreError, match="not an echsd database"):
        Store.open(db_path)


def test_application_id_marks_the_file(db_path: Path) -> None:
    with Store.open(db_path) as store:
        app_id = store.read_sync(lambda c: c.execute("PRAGMA application_id").fetchone()[0])
    assert app_id == APPLICATION_ID


def test_reader_connections_cannot_write(db_path: Path) -> None:
    with Store.open(db_path) as store, pytest.raises(apsw.ReadOnlyError):
        store.read_sync(lambda c: c.execute("INSERT INTO meta VALUES('a', 'b')"))


def test_delta_index_matches_the_delta_event_types() -> None:
    # If DELTA_EVENTS changes, a new migration must rebuild events_deltas to match.
    assert tuple(sorted(DELTA_EVENTS)) == INDEXED_DELTA_TYPES
    assert DELTA_PREDICATE in MIGRATIONS[0]


def test_concurrent_first_opens_migrate_once(db_path: Path) -> None:
    """Two processes (here: threads with their own connections) racing on a fresh file."""
    db_path.parent.mkdir(parents=True)
    barrier = threading.Barrier(4)
    errors: list[BaseException] = []

    def opener() -> None:
        try:
            barrier.wait()
            Store.open(db_path).close()
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=opener) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert [v for v, _ in _versions(db_path)] == list(range(1, LATEST_VERSION + 1))


def test_database_file_is_private(db_path: Path) -> None:
    Store.open(db_path).close()
    assert db_path.stat().st_mode & 0o777 == 0o600
    db_path.chmod(0o644)
    store = Store.open(db_path)
    try:
        assert db_path.stat().st_mode & 0o777 == 0o600
    finally:
        store.close()
