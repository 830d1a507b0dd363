"""The transaction helpers never leave a transaction open, on either backend."""

from __future__ import annotations

from pathlib import Path

import pytest

from echsd.store import Conn

from .conftest import Backend


def scratch(conn: Conn) -> None:
    conn.execute("CREATE TABLE t(x INTEGER PRIMARY KEY)")


def test_transaction_commits_or_rolls_back(backend: Backend) -> None:
    conn = backend.writer_conn()
    scratch(conn)
    with conn.transaction():
        conn.execute("INSERT INTO t VALUES(1)")
    with pytest.raises(Exception) as failed, conn.transaction():
        conn.execute("INSERT INTO t VALUES(2)")
        conn.execute("INSERT INTO t VALUES(1)")
    assert not conn.is_transient(failed.value)  # a constraint violation: the unit is wrong
    assert not conn.in_transaction
    with pytest.raises(KeyboardInterrupt), conn.transaction():
        conn.execute("INSERT INTO t VALUES(3)")
        raise KeyboardInterrupt
    assert not conn.in_transaction
    assert conn.execute("SELECT x FROM t").fetchall() == [(1,)]
    conn.close()


def test_transaction_recovers_from_a_leftover_open_transaction(backend: Backend) -> None:
    conn = backend.writer_conn()
    scratch(conn)
    conn.execute("BEGIN")
    conn.execute("INSERT INTO t VALUES(7)")
    with conn.transaction():
        conn.execute("INSERT INTO t VALUES(8)")
    assert conn.execute("SELECT x FROM t").fetchall() == [(8,)]
    conn.close()


def test_a_swallowed_error_is_never_reported_as_committed(backend: Backend) -> None:
    """After an error PostgreSQL aborts the whole transaction and answers COMMIT with
    ROLLBACK: a statement that catches its own error must not make the unit look written."""
    if backend.name == "sqlite":
        pytest.skip("SQLite undoes only the failed statement; the transaction goes on")
    conn = backend.writer_conn()
    scratch(conn)
    with pytest.raises(Exception, match="rolled back"), conn.transaction():
        conn.execute("INSERT INTO t VALUES(1)")
        try:
            conn.execute("INSERT INTO t VALUES(1)")
        except Exception:
            pass
    assert not conn.in_transaction
    assert conn.execute("SELECT count(*) FROM t").fetchone() == (0,)
    conn.close()


def test_sqlite_writer_connection_settings(tmp_path: Path) -> None:
    from echsd.store.sqlite.connection import open_writer

    conn = open_writer(tmp_path / "t.db")
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert conn.execute("PRAGMA synchronous").fetchone() == (1,)  # NORMAL
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] > 0
    conn.close()
