"""The transaction helper never leaves a transaction open."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest

from echsd.store.connection import open_writer, transaction


def test_transaction_commits_or_rolls_back(tmp_path: Path) -> None:
    conn = open_writer(tmp_path / "t.db")
    conn.execute("CREATE TABLE t(x INTEGER PRIMARY KEY)")
    with transaction(conn):
        conn.execute("INSERT INTO t VALUES(1)")
    with pytest.raises(apsw.ConstraintError), transaction(conn):
        conn.execute("INSERT INTO t VALUES(2)")
        conn.execute("INSERT INTO t VALUES(1)")
    assert not conn.in_transaction
    with pytest.raises(KeyboardInterrupt), transaction(conn):
        conn.execute("INSERT INTO t VALUES(3)")
        raise KeyboardInterrupt
    assert not conn.in_transaction
    assert conn.execute("SELECT x FROM t").fetchall() == [(1,)]
    conn.close()


def test_transaction_recovers_from_a_leftover_open_transaction(tmp_path: Path) -> None:
    conn = open_writer(tmp_path / "t.db")
    conn.execute("CREATE TABLE t(x)")
    conn.execute("BEGIN")
    conn.execute("INSERT INTO t VALUES('leftover')")
    with transaction(conn):
        conn.execute("INSERT INTO t VALUES('new')")
    assert conn.execute("SELECT x FROM t").fetchall() == [("new",)]
    conn.close()


def test_writer_connection_settings(tmp_path: Path) -> None:
    conn = open_writer(tmp_path / "t.db")
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert conn.execute("PRAGMA synchronous").fetchone() == (1,)  # NORMAL
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] > 0
    conn.close()
