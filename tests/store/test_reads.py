"""Readers run on their own pooled connections, concurrently with the writer."""

from __future__ import annotations

import threading

import pytest
import trio

from echsd.store import Conn, Store, StoreClosed, StoreError, Unit, ops, queries
from echsd.store.store import DEFAULT_READERS

from .conftest import Backend, ev

T = "thr_00000000000000bb"


def snapshot(conn: Conn) -> tuple[int, int, int]:
    items = queries.count_items(conn, T)
    events = queries.count_events(conn, T)
    return items, events, queries.last_seq(conn, T)


async def test_concurrent_reads_see_consistent_snapshots_while_writing(store: Store) -> None:
    """Every unit adds one item and its event: any snapshot must show equal counts."""
    stop = trio.Event()
    seen: list[tuple[int, int, int]] = []
    busy = 0
    peak = 0
    lock = threading.Lock()

    def observed(conn: Conn) -> tuple[int, int, int]:
        nonlocal busy, peak
        with lock:
            busy += 1
            peak = max(peak, busy)
        try:
            return snapshot(conn)
        finally:
            with lock:
                busy -= 1

    async def writer() -> None:
        for pos in range(3000):
            item = {"type": "message", "content": str(pos)}
            await store.writer.put(
                Unit(
                    statements=[ops.append_items(T, pos, [item])],
                    events=[ev(T, pos + 1, "item.completed")],
                )
            )
        await store.writer.flush()
        stop.set()

    async def reader() -> None:
        while not stop.is_set():
            seen.append(await store.read(observed))

    async with trio.open_nursery() as n:
        n.start_soon(writer)
        for _ in range(8):  # more tasks than connections: the pool bounds them
            n.start_soon(reader)
    assert seen, "readers never ran"
    assert all(items == events == last for items, events, last in seen)
    assert peak <= DEFAULT_READERS
    assert await store.read(snapshot) == (3000, 3000, 3000)
    assert len(store._free) <= DEFAULT_READERS


async def test_reads_are_not_blocked_by_an_open_write(store: Store) -> None:
    gate, entered = threading.Event(), threading.Event()

    def hold(conn: Conn) -> None:
        conn.execute("INSERT INTO meta VALUES('pending', 'yes')")
        entered.set()
        gate.wait()

    await store.writer.commit(Unit(statements=[ops.set_meta("committed", "yes")]))
    unit = store.writer.put_nowait(Unit(statements=[hold]))
    await trio.to_thread.run_sync(entered.wait)
    # The writer holds an open transaction; readers still see the last committed state.
    assert await store.read(lambda c: queries.get_meta(c, "committed")) == "yes"
    assert await store.read(lambda c: queries.get_meta(c, "pending")) is None
    gate.set()
    await unit.wait()
    assert await store.read(lambda c: queries.get_meta(c, "pending")) == "yes"


async def test_read_after_close_is_refused(backend: Backend) -> None:
    s = backend.open()
    assert await s.read(lambda c: 1) == 1
    s.close()
    s.close()  # idempotent
    with pytest.raises(StoreClosed):
        await s.read(lambda c: 1)
    with pytest.raises(StoreClosed):
        s.read_sync(lambda c: 1)


async def test_a_failing_read_is_a_store_error_and_the_pool_carries_on(store: Store) -> None:
    with pytest.raises(StoreError, match="store read failed"):
        await store.read(lambda c: c.execute("SELECT * FROM no_such_table").fetchall())
    assert await store.read(lambda c: c.execute("SELECT 1").fetchone()) == (1,)


async def test_reads_cannot_write(store: Store) -> None:
    with pytest.raises(StoreError):
        await store.read(lambda c: c.execute("INSERT INTO meta VALUES('a', 'b')"))
    assert await store.read(lambda c: queries.get_meta(c, "a")) is None
