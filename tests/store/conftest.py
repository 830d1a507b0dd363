"""Fixtures: a real store on each backend (an SQLite file in tmp_path, a fresh database in
the session's PostgreSQL cluster), its writer running in the test's nursery."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import trio

from echsd.events import Event
from echsd.store import Conn, Store, open_store

BACKENDS = ("sqlite", "postgresql")


def ev(
    thread_id: str, seq: int, type: str = "turn.delta", ts: float | None = None, **data: Any
) -> Event:
    return Event(
        thread_id=thread_id, seq=seq, type=type, ts=float(seq) if ts is None else ts, data=data
    )


@dataclass
class Backend:
    """One backend's database for one test, and its raw connections."""

    name: str
    target: str | Path  # what Store.open takes

    def open(self, **kwargs: Any) -> Store:
        return open_store(self.target, **kwargs)

    def writer_conn(self) -> Conn:
        """A migrated writer connection of the kind ``Store.open`` gives its writer."""
        if self.name == "sqlite":
            from echsd.store.sqlite.connection import open_writer
            from echsd.store.sqlite.schema import migrate

            assert isinstance(self.target, Path)
            self.target.parent.mkdir(parents=True, exist_ok=True)
            conn = open_writer(self.target)
            migrate(conn)
            return conn
        from echsd.store.postgres.connection import PgConn
        from echsd.store.postgres.schema import migrate as pg_migrate

        pg = PgConn(str(self.target), "echsd test")
        pg_migrate(pg, "test")
        return pg

    def probe(self) -> Conn:
        """A separate connection that sees what any reader would see (committed rows)."""
        if self.name == "sqlite":
            from echsd.store.sqlite.connection import open_reader

            assert isinstance(self.target, Path)
            return open_reader(self.target)
        from echsd.store.postgres.connection import PgConn

        return PgConn(str(self.target), "echsd probe")

    def transient_error(self) -> Exception:
        """An error the backend retries (busy database; serialization failure)."""
        if self.name == "sqlite":
            import apsw

            return apsw.BusyError("database is locked (simulated)")
        from psycopg import errors

        return errors.SerializationFailure("could not serialize access (simulated)")


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "sqlite":
        yield Backend("sqlite", tmp_path / "state" / "echsd.db")
        return
    from tests.pgcluster import database_for

    cluster = request.getfixturevalue("pg_cluster")
    name = database_for(str(tmp_path))
    yield Backend("postgresql", cluster.create_database(name))
    cluster.drop_database(name)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "echsd.db"


@pytest.fixture
async def store(backend: Backend, nursery: trio.Nursery) -> AsyncIterator[Store]:
    """An open store whose writer runs until the test ends (then aclose + close)."""
    s = backend.open()
    await nursery.start(s.writer.run)
    yield s
    await s.writer.aclose()
    s.close()
