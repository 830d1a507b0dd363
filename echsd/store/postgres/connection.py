"""PostgreSQL connections: ``PgConn``, a ``Conn`` over one blocking psycopg connection.

Blocking, not psycopg's async API: psycopg's async connections are built on asyncio and
have no trio support (psycopg issue #29), and bridging them through trio-asyncio would put
a second event loop under every query. A blocking connection driven from a worker thread
is what the SQLite backend already does with apsw, so the writer (one connection, one
``trio.to_thread`` hop per group commit) and the reader pool are the same code for both.
LISTEN/NOTIFY, when it comes, fits the same way: a connection's socket can be waited on
with ``trio.lowlevel.wait_readable`` and drained without a thread.

The connection runs in autocommit mode and transactions are explicit (BEGIN ... COMMIT),
exactly as on SQLite. SQL arrives with ``?`` placeholders (``echsd.store.conn``) and is
rewritten once per distinct text to psycopg's ``%s``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from functools import lru_cache
from typing import Any, Literal

import orjson
import psycopg
from psycopg import errors as pg_errors
from psycopg.pq import TransactionStatus

from echsd.events import Event

CONNECT_TIMEOUT_S = 10

INSERT_EVENT = "INSERT INTO events(thread_id, seq, type, ts, data) VALUES(%s, %s, %s, %s, %s)"
COPY_EVENTS = "COPY events(thread_id, seq, type, ts, data) FROM STDIN (FORMAT BINARY)"
COPY_TYPES = ("text", "int8", "text", "float8", "bytea")
_COPY_MIN = 4  # below this, plain (prepared) inserts are as cheap as a COPY

# "The server or the network is in the way" (connection lost, server restarting, out of
# disk, lock or serialization conflicts): retried with backoff. Everything else means
# "this unit is wrong" and fails the unit.
TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    psycopg.OperationalError,
    pg_errors.TransactionRollback,
)


class TransactionAborted(psycopg.DatabaseError):
    """COMMIT answered ROLLBACK: an error inside the transaction was swallowed."""


@lru_cache(maxsize=1024)
def to_psycopg(sql: str) -> str:
    """``?`` placeholders to psycopg's ``%s`` (a literal ``%`` is doubled)."""
    return sql.replace("%", "%%").replace("?", "%s")


def connect(conninfo: str, application_name: str) -> psycopg.Connection[Any]:
    """A new autocommit connection; raises ``psycopg.OperationalError`` when unreachable."""
    return psycopg.connect(
        conninfo,
        autocommit=True,
        application_name=application_name,
        connect_timeout=CONNECT_TIMEOUT_S,
    )


class PgConn:
    """A ``Conn`` (see ``echsd.store.conn``) over a psycopg connection.

    A connection that broke (server restart, network) is replaced by a new one at the
    next ``transaction``: the writer's retry of a transient error then just works.
    """

    dialect: Literal["postgresql"] = "postgresql"

    def __init__(self, conninfo: str, application_name: str) -> None:
        self._conninfo = conninfo
        self._application_name = application_name
        self.raw = connect(conninfo, application_name)

    @property
    def in_transaction(self) -> bool:
        return self.raw.info.transaction_status != TransactionStatus.IDLE

    @property
    def broken(self) -> bool:
        return self.raw.closed or self.raw.broken

    def execute(self, sql: str, bindings: Sequence[Any] = ()) -> psycopg.Cursor[Any]:
        cursor = self.raw.cursor()
        if bindings:
            cursor.execute(to_psycopg(sql), bindings)
        else:
            cursor.execute(sql)  # no placeholders: sent as written (scripts too)
        return cursor

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        with self.raw.cursor() as cursor:
            cursor.executemany(to_psycopg(sql), rows)

    def insert_events(self, events: Sequence[Event]) -> None:
        with self.raw.cursor() as cursor:
            if len(events) < _COPY_MIN:
                for e in events:
                    cursor.execute(INSERT_EVENT, (e.thread_id, e.seq, e.type, e.ts, orjson.dumps(e.data)))
                return
            with cursor.copy(COPY_EVENTS) as copy:
                copy.set_types(COPY_TYPES)
                for e in events:
                    copy.write_row((e.thread_id, e.seq, e.type, e.ts, orjson.dumps(e.data)))

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """BEGIN ... COMMIT, or ROLLBACK on any exception (including BaseException)."""
        if self.broken:
            self._reconnect()
        elif self.in_transaction:  # only after a ROLLBACK that itself failed: start clean
            self._rollback()
        self.raw.execute("BEGIN")
        try:
            yield
            status = self.raw.execute("COMMIT").statusmessage
            if status != "COMMIT":  # the server rolled back: never report that as written
                raise TransactionAborted(f"the transaction was rolled back by the server ({status})")
        except BaseException:
            self._rollback()
            raise

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """REPEATABLE READ, READ ONLY: one snapshot for the whole block, and no writes."""
        self.raw.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        try:
            yield
        finally:
            self._rollback()

    def is_transient(self, exc: BaseException) -> bool:
        return isinstance(exc, TRANSIENT_ERRORS)

    def close(self) -> None:
        self.raw.close()

    def _rollback(self) -> None:
        """Roll back if a transaction is open; a failure here must not mask the first error."""
        if self.broken or not self.in_transaction:
            return
        with suppress(psycopg.Error):
            self.raw.execute("ROLLBACK")

    def _reconnect(self) -> None:
        with suppress(psycopg.Error):
            self.raw.close()
        self.raw = connect(self._conninfo, self._application_name)
