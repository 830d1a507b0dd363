"""``Conn``: what the store's SQL code may use of a connection, on either backend.

Queries (``queries.py``), statement builders (``ops.py``), the writer and the migrations run
on a ``Conn``: ``SqliteConn`` (an ``apsw.Connection`` subclass, so SQLite pays nothing for
the indirection) or ``PgConn`` (a thin wrapper around a blocking psycopg connection).

Rules for SQL text shared by both engines: positional ``?`` placeholders only (never ``?1``
or ``:name``); no ``?`` or ``%`` inside string literals (``PgConn`` rewrites placeholders to
psycopg's ``%s``); only functions both engines have. Where the engines differ, branch on
``conn.dialect``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, Literal, Protocol

from echsd.events import Event

Dialect = Literal["sqlite", "postgresql"]


class Cursor(Protocol):
    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Conn(Protocol):
    dialect: Dialect

    @property
    def in_transaction(self) -> bool: ...

    @property
    def broken(self) -> bool:
        """True once the connection cannot be used again (the pool drops it)."""
        ...

    def execute(self, sql: str, bindings: Sequence[Any] = ...) -> Cursor: ...

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> Any: ...

    def insert_events(self, events: Sequence[Event]) -> None:
        """Append ``events`` to the event log, the fastest way the engine allows."""
        ...

    def transaction(self) -> AbstractContextManager[None]:
        """A write transaction: committed at the end of the block, rolled back on any
        exception (``BaseException`` included)."""
        ...

    def snapshot(self) -> AbstractContextManager[None]:
        """A read-only transaction: every query in the block sees one snapshot."""
        ...

    def is_transient(self, exc: BaseException) -> bool:
        """True for "the engine or the network is in the way" (retry with backoff), false
        for "this unit is wrong" (fail it)."""
        ...

    def close(self) -> None: ...
