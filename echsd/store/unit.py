"""``Unit``: one atomic group of writes, and how it is applied inside a transaction.

A unit's statements and events commit together or not at all, so an item and the event
announcing it are never split by a crash. The completion signal is created lazily: at
40k units/s most units are never awaited, and a ``trio.Event`` each would be waste.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import trio

from echsd.events import Event
from echsd.store.conn import Conn
from echsd.store.errors import StoreError

Bindings: TypeAlias = tuple[Any, ...]
Statement: TypeAlias = tuple[str, Bindings] | Callable[[Conn], None]
"""(SQL, bindings), or a callable run on the writer's ``Conn`` inside the transaction.

Both forms are backend-neutral: the SQL follows the rules of ``echsd.store.conn``. A
callable may run more than once (a failed batch is rolled back and retried), so it must
only touch the database it is given.
"""


@dataclass(eq=False, slots=True)
class Unit:
    """One atomic group of writes: all of it commits or none of it.

    ``statements`` run first, in order, then ``events`` are inserted into the event log;
    the events are published (``on_commit``) only after the transaction committed.
    ``notices`` are published with them but never stored: what a unit ends rather than
    logs (``thread.deleted``, whose log the unit removes).
    ``on_done(error)`` (error None: committed) runs on the trio thread as soon as the writer
    is finished with the unit, in submission order, before anyone waiting on it wakes: the
    place for an owner of in-memory state to apply (or drop) what it decided, and publish
    it, with no checkpoint in between. It must not block; an exception is logged.
    ``fence`` names the thread whose lease the unit was decided under: where several
    daemons share the database, the writer's guard stamps it with the node's lease as it is
    submitted (``epoch``) and refuses it once the lease moved on, also when this node holds
    a newer lease by the time the unit reaches the database (it rejoined after an outage).
    """

    events: list[Event] = field(default_factory=list)
    statements: list[Statement] = field(default_factory=list)
    notices: list[Event] = field(default_factory=list)
    on_done: Callable[[StoreError | None], None] | None = None
    fence: str | None = None  # the thread this unit writes for (checked against its lease)
    epoch: int | None = None  # the lease it was submitted under (stamped by the writer's guard)
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


def run_statement(conn: Conn, statement: Statement) -> None:
    if callable(statement):
        statement(conn)
        return
    sql, bindings = statement
    conn.execute(sql, bindings)


def apply_units(conn: Conn, units: Sequence[Unit]) -> None:
    """Write ``units`` in order on ``conn`` (inside the caller's transaction).

    Events of consecutive units are inserted together; pending events are flushed
    before any statement runs, so a statement sees every earlier unit's rows.
    """
    batch: list[Event] = []
    for unit in units:
        if unit.statements:
            if batch:
                conn.insert_events(batch)
                batch = []
            for statement in unit.statements:
                run_statement(conn, statement)
        batch.extend(unit.events)
    if batch:
        conn.insert_events(batch)
