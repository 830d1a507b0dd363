"""Opening: migrations applied once on both backends, refusal of newer and foreign databases,
the SQLite file's own rules (private dir and file, WAL), clear errors for bad stores."""

from __future__ import annotations

import stat
import threading
from pathlib import Path

import apsw
import pytest

from echsd.events import DELTA_EVENTS
from echsd.store import LATEST_VERSION, MIGRATIONS, StoreError, open_store, queries
from echsd.store.schema import APPLICATION_ID, DELTA_PREDICATE, INDEXED_DELTA_TYPES, script_digest

from .conftest import Backend

# Migrations are never edited once released: if this fails, add a new migration instead.
PINNED_DIGESTS = {
    "sqlite": {
        1: "82f1dcf9cc253ba714a5a955ae8d92354e6060f1f0e14c1af48f914a124ab8bb",
        2: "2d0c0764aafaafa8a4dd84b17349030a4e2775be0c97291790b6638835c7b5c0",
        3: "439229a1f51d7db129d5232d7292d0da80713b756b8c73e010d82097f4f7ef67",
    },
    "postgresql": {
        1: "2c8612257e603d90118ed18e589e79ff129499fff8a9bb99628c68a0c4711239",
        2: "2d0c0764aafaafa8a4dd84b17349030a4e2775be0c97291790b6638835c7b5c0",
        3: "22bbc4176018d9a9250bc198ded5af0aadc371e251d6a58d9bc363ab2c438d47",
    },
}
TABLES = {"threads", "items", "inputs", "events", "event_gaps", "blackboard", "blackboard_log", "meta", "nodes", "requests", "schema_version"}
LIST_TABLES = {
    "sqlite": "SELECT name FROM sqlite_master WHERE type = 'table'",
    "postgresql": "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()",
}


def versions(backend: Backend) -> list[tuple[int, str]]:
    with backend.open() as store:
        return store.read_sync(
            lambda c: [tuple(r) for r in c.execute("SELECT version, sha256 FROM schema_version ORDER BY version")]
        )


def test_open_creates_the_schema(backend: Backend) -> None:
    with backend.open() as store:
        tables = store.read_sync(lambda c: {r[0] for r in c.execute(LIST_TABLES[c.dialect])})
    assert tables == TABLES
    assert [v for v, _ in versions(backend)] == list(range(1, LATEST_VERSION + 1))


def test_migrations_apply_once_and_reopen_is_idempotent(backend: Backend) -> None:
    first = versions(backend)
    for _ in range(3):
        backend.open().close()
    assert versions(backend) == first
    assert len(first) == LATEST_VERSION
    assert [digest for _, digest in first] == [
        script_digest(m.script(backend.name)) for m in MIGRATIONS  # type: ignore[arg-type]
    ]


def test_released_migrations_are_never_edited() -> None:
    for dialect, pins in PINNED_DIGESTS.items():
        for version, digest in pins.items():
            script = MIGRATIONS[version - 1].script(dialect)  # type: ignore[arg-type]
            assert script_digest(script) == digest, f"{dialect} migration {version} was edited"


def test_newer_schema_is_refused(backend: Backend) -> None:
    conn = backend.writer_conn()
    with conn.transaction():
        conn.execute("INSERT INTO schema_version VALUES(?, 0, 'x')", (LATEST_VERSION + 1,))
    conn.close()
    with pytest.raises(StoreError, match="newer"):
        backend.open()


def test_concurrent_first_opens_migrate_once(backend: Backend) -> None:
    """Several processes (here: threads with their own connections) racing on a fresh store."""
    if isinstance(backend.target, Path):
        backend.target.parent.mkdir(parents=True)
    barrier = threading.Barrier(4)
    errors: list[BaseException] = []

    def opener() -> None:
        try:
            barrier.wait()
            backend.open().close()
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=opener) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert [v for v, _ in versions(backend)] == list(range(1, LATEST_VERSION + 1))


def test_delta_index_matches_the_delta_event_types() -> None:
    # If DELTA_EVENTS changes, a new migration must rebuild events_deltas to match.
    assert tuple(sorted(DELTA_EVENTS)) == INDEXED_DELTA_TYPES
    assert DELTA_PREDICATE in MIGRATIONS[0].sqlite
    assert DELTA_PREDICATE in MIGRATIONS[0].postgresql


def test_both_dialects_have_every_migration() -> None:
    for migration in MIGRATIONS:
        assert migration.sqlite.strip() and migration.postgresql.strip()


# -- PostgreSQL ------------------------------------------------------------------------------


def test_postgresql_database_of_another_application_is_refused(backend: Backend) -> None:
    if backend.name != "postgresql":
        pytest.skip("SQLite's foreign files: test_another_applications_file_is_refused")
    import psycopg

    with psycopg.connect(str(backend.target), autocommit=True) as conn:
        conn.execute("CREATE TABLE customers(id int)")
    with pytest.raises(StoreError, match="not an echsd database.*customers"):
        backend.open()


def test_unreachable_postgresql_is_one_clear_line(tmp_path: Path) -> None:
    url = f"postgresql://nobody:hunter22@/echsd?host={tmp_path}"  # no server on that socket
    with pytest.raises(StoreError) as failed:
        open_store(url)
    message = failed.value.message
    assert "\n" not in message
    assert message.startswith("cannot use the PostgreSQL store postgresql://nobody:***@/echsd")
    assert "hunter22" not in message


def test_unsupported_store_url_is_refused() -> None:
    with pytest.raises(StoreError, match="unsupported store 'mysql'"):
        open_store("mysql://localhost/db")
    with pytest.raises(StoreError, match="expected sqlite:///PATH"):
        open_store("sqlite://relative-without-slash.db")


# -- SQLite ----------------------------------------------------------------------------------


def test_sqlite_open_creates_private_dir_and_wal(db_path: Path) -> None:
    with open_store(db_path) as store:
        assert store.location == str(db_path)
        assert stat.S_IMODE(db_path.parent.stat().st_mode) == 0o700
        mode = store.read_sync(lambda c: c.execute("PRAGMA journal_mode").fetchone()[0])
        assert mode == "wal"
        assert store.read_sync(queries.integrity_check) == "ok"


def test_sqlite_url_names_the_same_file(db_path: Path) -> None:
    with open_store(f"sqlite:///{db_path}") as store:
        assert store.location == str(db_path)
    assert db_path.exists()


def test_garbage_file_is_refused(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    db_path.write_bytes(b"this is not a database at all, just text\n" * 100)
    with pytest.raises(StoreError, match="not an SQLite database"):
        open_store(db_path)


def test_another_applications_file_is_refused(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    conn = apsw.Connection(str(db_path))
    conn.execute("PRAGMA application_id = 1234; CREATE TABLE t(x)")
    conn.close()
    with pytest.raises(StoreError, match="not an echsd database"):
        open_store(db_path)


def test_application_id_marks_the_file(db_path: Path) -> None:
    with open_store(db_path) as store:
        app_id = store.read_sync(lambda c: c.execute("PRAGMA application_id").fetchone()[0])
    assert app_id == APPLICATION_ID


def test_database_file_is_private(db_path: Path) -> None:
    open_store(db_path).close()
    assert db_path.stat().st_mode & 0o777 == 0o600
    db_path.chmod(0o644)
    store = open_store(db_path)
    try:
        assert db_path.stat().st_mode & 0o777 == 0o600
    finally:
        store.close()
