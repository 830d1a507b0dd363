"""``Unit``: one atomic group of writes, and how it is applied inside a transaction.

A unit's statements and events commit together or not at all, so an item and the event
announcing it are never split by a crash. The completion signal is created lazily: at
40k units/s most units are never awaited, and a ``trio.Event`` each would be waste.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import apsw
import orjson
import trio

from echsd.events import Event
from echsd.store.errors import StoreError

Bindings: TypeAlias = tuple[Any, ...] | dict[str, Any]
Statement: TypeAlias = tuple[str, Bindings] | Callable[[apsw.Connection], None]
"""(SQL, bindings), or a callable run on the writer connection inside the transaction.

A callable may run more than once (a failed batch is rolled back and retried), so it must
only touch the database it is given.
"""

INSERT_EVENT = "INSERT INTO events(thread_id, seq, type, ts, data) VALUES(?, ?, ?, ?, ?)"


@dataclass(eq=False, slots=True)
class Unit:
    """One atomic group of writes: all of it commits or none of it.

    ``statements`` run first, in order, then ``events`` are inserted into the event log;
    the events are published (``on_commit``) only after the transaction committed.
    """

    events: list[Event] = field(default_factory=list)
    statements: list[Statement] = field(default_factory=list)
    _submitted: bool = field(default=False, init=False, repr=False)
    _done: bool = field(default=False, init=False, repr=False)
    _error: BaseException | None = field(default=None, init=False, repr=False)
    _signal: trio.Event | None = field(default=None, init=False, repr=False)

    @property
    def done(self) -> bool:
        """True once the writer finished with this unit (committed or failed)."""
        return self._done

    @property
    def failed(self) -> bool:
        return self._error is not None

    async def wait(self) -> None:
        """Return once committed; raise ``StoreError`` if this unit failed.

        Cancelling the waiter does not cancel the unit: it is the writer's now.
        """
        await self.wait_done()
        error = self._error
        if error is None:
            return
        if isinstance(error, StoreError):  # a fresh copy per waiter keeps tracebacks short
            raise type(error)(error.message) from error.__cause__
        raise StoreError(str(error)) from error

    async def wait_done(self) -> None:
        """Return once the writer finished with this unit, whatever the outcome."""
        if self._done:
            await trio.lowlevel.checkpoint()
            return
        if self._signal is None:
            self._signal = trio.Event()
        await self._signal.wait()

    def _resolve(self, error: BaseException | None) -> None:
        """Called on the trio thread by the writer, after commit (or failure)."""
        self._error = error
        self._done = True
        if self._signal is not None:
            self._signal.set()


def run_statement(conn: apsw.Connection, statement: Statement) -> None:
    if callable(statement):
        statement(conn)
        return
    sql, bindings = statement
    conn.execute(sql, bindings)


# Many events go in as ONE statement over one JSON array: a single sqlite3_step, during
# which apsw releases the GIL, instead of a step per row with a GIL hand-off each (which
# starved the writer thread while a busy trio thread held the GIL). SQLite re-renders
# each element's ``data`` byte-for-byte as orjson wrote it, and parses floats exactly.
INSERT_EVENTS_JSON = (
    "INSERT INTO events(thread_id, seq, type, ts, data) "
    "SELECT value->>0, value->>1, value->>2, value->>3, CAST(value->'$[4]' AS BLOB) "
    "FROM json_each(?)"
)
_JSON_MIN = 4  # below this, plain inserts are as cheap


def insert_events(conn: apsw.Connection, events: Sequence[Event]) -> None:
    if len(events) < _JSON_MIN:
        for e in events:
            conn.execute(INSERT_EVENT, (e.thread_id, e.seq, e.type, e.ts, orjson.dumps(e.data)))
        return
    payload = orjson.dumps([(e.thread_id, e.seq, e.type, e.ts, e.data) for e in events])
    conn.execute(INSERT_EVENTS_JSON, (payload,))


def apply_units(conn: apsw.Connection, units: Sequence[Unit]) -> None:
    """Write ``units`` in order on ``conn`` (inside the caller's transaction).

    Events of consecutive units are inserted together; pending events are flushed
    before any statement runs, so a statement sees every earlier unit's rows.
    """
    batch: list[Event] = []
    for unit in units:
        if unit.statements:
            if batch:
                insert_events(conn, batch)
                batch = []
            for statement in unit.statements:
                run_statement(conn, statement)
        batch.extend(unit.events)
    if batch:
        insert_events(conn, batch)
