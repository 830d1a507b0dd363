"""StoreWriter: group commit, publish after commit, order, isolation, backpressure, stop."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
import trio
import trio.testing

from echsd.events import Event
from echsd.store import Conn, Store, StoreClosed, StoreConflict, StoreError, StoreWriter, Unit, ops, queries

from .conftest import Backend, ev

TID = "thr_00000000000000aa"


def item_unit(pos: int, seq: int, thread_id: str = TID) -> Unit:
    item = {"type": "message", "role": "assistant", "content": f"item {pos}"}
    return Unit(
        statements=[ops.append_items(thread_id, pos, [item])],
        events=[ev(thread_id, seq, "item.completed", item=item)],
    )


def make_writer(backend: Backend, **kwargs: object) -> tuple[StoreWriter, Conn]:
    conn = backend.writer_conn()
    return StoreWriter(conn, **kwargs), conn  # type: ignore[arg-type]


async def test_group_commit_many_units_few_transactions(store: Store) -> None:
    w = store.writer
    units = [w.put_nowait(Unit(events=[ev(TID, i)])) for i in range(1, 1001)]
    await w.flush()
    assert all(u.done and not u.failed for u in units)
    # put_nowait never yields, so the writer saw all 1000 at once: one transaction.
    assert w.stats.transactions == 1
    assert w.stats.largest_batch == 1000
    for i in range(1001, 6001):
        await w.put(Unit(events=[ev(TID, i)]))
    await w.flush()
    assert w.stats.units == 6000
    assert w.stats.transactions < 6000 // 10
    assert await store.read(lambda c: queries.count_events(c, TID)) == 6000


async def test_publish_after_commit_in_submission_order(store: Store, backend: Backend) -> None:
    probe = backend.probe()  # a separate connection: what any reader would see
    published: list[Event] = []
    calls = 0

    def on_commit(events: list[Event]) -> None:
        nonlocal calls
        calls += 1
        for e in events:
            row = probe.execute(
                "SELECT type FROM events WHERE thread_id = ? AND seq = ?", (e.thread_id, e.seq)
            ).fetchone()
            assert row == (e.type,), f"{e.seq} published before it was readable"
        published.extend(events)

    store.writer.set_on_commit(on_commit)
    expected: list[tuple[str, int]] = []
    async with trio.open_nursery() as n:
        for t in range(3):  # three submitters interleave; each one's order must hold
            tid = f"thr_{t:016x}"

            async def submit(tid: str = tid) -> None:
                for seq in range(1, 301):
                    await store.writer.put(item_unit(seq - 1, seq, tid))

            n.start_soon(submit)
    await store.writer.flush()
    probe.close()
    assert len(published) == 900
    assert calls < 900
    for t in range(3):
        tid = f"thr_{t:016x}"
        seqs = [e.seq for e in published if e.thread_id == tid]
        assert seqs == list(range(1, 301))
        expected.extend((tid, s) for s in seqs)
    assert sorted(expected) == sorted((e.thread_id, e.seq) for e in published)


async def test_units_resolve_in_submission_order(store: Store) -> None:
    order: list[int] = []
    units = [store.writer.put_nowait(Unit(events=[ev(TID, i)])) for i in range(1, 51)]

    async def waiter(i: int, u: Unit) -> None:
        await u.wait()
        order.append(i)

    async with trio.open_nursery() as n:
        for i, u in enumerate(units):
            n.start_soon(waiter, i, u)
    assert sorted(order) == list(range(50))
    assert all(u.done for u in units)


async def test_on_done_runs_in_order_before_waiters_wake(store: Store) -> None:
    """Each unit's ``on_done`` gets its outcome in submission order, and has run by the time
    anyone waiting on the unit wakes; a failing ``on_done`` is logged, nothing more."""
    seen: list[tuple[int, str | None]] = []

    def done(i: int) -> Callable[[StoreError | None], None]:
        def on_done(error: StoreError | None) -> None:
            seen.append((i, None if error is None else type(error).__name__))
            if i == 3:
                raise RuntimeError("a broken callback")

        return on_done

    def conflict(conn: Conn) -> None:
        raise StoreConflict("changed meanwhile")

    w = store.writer
    units = [w.put_nowait(Unit(statements=[ops.set_meta(f"k{i}", "v")] if i != 2 else [conflict], on_done=done(i))) for i in range(5)]
    for i, unit in enumerate(units):
        if i == 2:
            with pytest.raises(StoreConflict):
                await unit.wait()
        else:
            await unit.wait()
        assert (i, "StoreConflict" if i == 2 else None) in seen
    assert seen == [(0, None), (1, None), (2, "StoreConflict"), (3, None), (4, None)]


async def test_failing_unit_is_isolated_and_the_rest_commit(store: Store) -> None:
    published: list[Event] = []
    store.writer.set_on_commit(published.extend)
    w = store.writer
    good1 = w.put_nowait(item_unit(0, 1))
    bad = w.put_nowait(
        Unit(statements=[("INSERT INTO no_such_table VALUES(1)", ())], events=[ev(TID, 2)])
    )
    good2 = w.put_nowait(item_unit(1, 2))
    dup = w.put_nowait(Unit(events=[ev(TID, 2, "turn.delta")]))  # seq 2 again: conflict
    good3 = w.put_nowait(item_unit(2, 3))
    await w.flush()
    for u in (good1, good2, good3):
        await u.wait()
    for u in (bad, dup):
        assert u.failed
        with pytest.raises(StoreError, match="store write failed"):
            await u.wait()
    assert w.stats.isolations == 1
    assert w.stats.failed_units == 2
    assert [e.seq for e in published] == [1, 2, 3]
    assert all(e.type == "item.completed" for e in published)
    assert await store.read(lambda c: queries.count_items(c, TID)) == 3
    # The bad unit's event did not sneak in: its whole unit rolled back.
    events = await store.read(lambda c: queries.read_events(c, TID, 0))
    assert [(e.seq, e.type) for e in events] == [(i, "item.completed") for i in (1, 2, 3)]


async def test_callable_raising_fails_only_its_unit(store: Store) -> None:
    def boom(conn: Conn) -> None:
        conn.execute("INSERT INTO meta VALUES('half', 'written')")
        raise ValueError("bug in a statement")

    w = store.writer
    ok = w.put_nowait(Unit(statements=[ops.set_meta("a", "1")]))
    bad = w.put_nowait(Unit(statements=[boom]))
    with pytest.raises(StoreError, match="bug in a statement"):
        await bad.wait()
    await ok.wait()
    assert await store.read(lambda c: queries.get_meta(c, "a")) == "1"
    assert await store.read(lambda c: queries.get_meta(c, "half")) is None


async def test_transient_errors_are_retried(backend: Backend, nursery: trio.Nursery) -> None:
    w, conn = make_writer(backend, retry_base_s=0.001)
    failures = 3

    def flaky(conn: Conn) -> None:
        nonlocal failures
        if failures:
            failures -= 1
            raise backend.transient_error()
        conn.execute("INSERT INTO meta VALUES('k', 'v')")

    await nursery.start(w.run)
    before = w.put_nowait(Unit(events=[ev(TID, 1)]))
    unit = w.put_nowait(Unit(statements=[flaky], events=[ev(TID, 2)]))
    await unit.wait()
    await before.wait()
    assert w.stats.transient_retries == 3
    assert w.stats.isolations == 0
    await w.aclose()
    assert conn.execute("SELECT value FROM meta WHERE key = 'k'").fetchone() == ("v",)
    assert conn.execute("SELECT count(*) FROM events").fetchone() == (2,)
    conn.close()


async def test_transient_errors_give_up_after_budget(backend: Backend, nursery: trio.Nursery) -> None:
    w, conn = make_writer(backend, retry_base_s=0.001, retry_budget_s=0.0)

    def always_busy(conn: Conn) -> None:
        raise backend.transient_error()

    await nursery.start(w.run)
    unit = w.put_nowait(Unit(statements=[always_busy]))
    with pytest.raises(StoreError, match="retries"):
        await unit.wait()
    after = w.put_nowait(Unit(events=[ev(TID, 1)]))
    await after.wait()  # the writer carries on
    await w.aclose()
    conn.close()


async def test_backpressure_at_max_pending(backend: Backend) -> None:
    w, conn = make_writer(backend, max_pending=3)
    units = [w.put_nowait(Unit(events=[ev(TID, i)])) for i in range(1, 4)]
    with pytest.raises(trio.WouldBlock):
        w.put_nowait(Unit(events=[ev(TID, 99)]))
    fourth = Unit(events=[ev(TID, 4)])
    put_done = trio.Event()

    async def blocked_put() -> None:
        await w.put(fourth)
        put_done.set()

    async with trio.open_nursery() as n:
        n.start_soon(blocked_put)
        await trio.testing.wait_all_tasks_blocked()
        assert not put_done.is_set()
        assert w.outstanding == 3
        await n.start(w.run)
        await put_done.wait()
        await fourth.wait()
        await w.aclose()
    assert all(u.done and not u.failed for u in units)
    assert conn.execute("SELECT count(*) FROM events").fetchone() == (4,)
    conn.close()


async def test_cancelled_put_does_not_enqueue(backend: Backend) -> None:
    w, conn = make_writer(backend, max_pending=2)
    early = Unit(events=[ev(TID, 1)])
    with trio.CancelScope() as scope:
        scope.cancel()
        await w.put(early)  # room available, but cancelled first: not enqueued
    assert scope.cancelled_caught and w.outstanding == 0
    w.put_nowait(Unit(events=[ev(TID, 1)]))
    w.put_nowait(Unit(events=[ev(TID, 2)]))
    blocked = Unit(events=[ev(TID, 3)])
    async with trio.open_nursery() as n:
        n.start_soon(w.put, blocked)
        await trio.testing.wait_all_tasks_blocked()
        n.cancel_scope.cancel()  # cancelled while waiting for room
    assert w.outstanding == 2
    # Neither cancelled unit was taken: both can still be submitted.
    assert not early._submitted and not blocked._submitted
    await w.aclose()  # never ran: the pending unit is reported, not lost silently
    conn.close()


async def test_flush_waits_for_everything_before_it(store: Store) -> None:
    await store.writer.flush()  # nothing pending: returns at once
    units = [store.writer.put_nowait(item_unit(i, i + 1)) for i in range(200)]
    await store.writer.flush()
    assert all(u.done for u in units)
    assert await store.read(lambda c: queries.last_seq(c, TID)) == 200


async def test_aclose_commits_pending_then_stops(backend: Backend) -> None:
    store = backend.open()
    async with trio.open_nursery() as n:
        await n.start(store.writer.run)
        units = [store.writer.put_nowait(Unit(events=[ev(TID, i)])) for i in range(1, 501)]
        await store.writer.aclose()
        with pytest.raises(StoreClosed):
            store.writer.put_nowait(Unit(events=[ev(TID, 501)]))
        with pytest.raises(StoreClosed):
            await store.writer.put(Unit(events=[ev(TID, 501)]))
    # The nursery exited: run() returned by itself after aclose.
    assert all(u.done and not u.failed for u in units)
    assert store.read_sync(lambda c: queries.last_seq(c, TID)) == 500
    store.close()


async def test_aclose_without_run_fails_pending_units(backend: Backend) -> None:
    w, conn = make_writer(backend)
    unit = w.put_nowait(Unit(events=[ev(TID, 1)]))
    await w.aclose()
    with pytest.raises(StoreClosed):
        await unit.wait()
    conn.close()


async def test_unit_cannot_be_submitted_twice(store: Store) -> None:
    unit = store.writer.put_nowait(Unit(events=[ev(TID, 1)]))
    with pytest.raises(ValueError):
        store.writer.put_nowait(unit)
    await unit.wait()


async def test_cancelled_waiter_does_not_lose_its_unit(store: Store) -> None:
    gate, entered = threading.Event(), threading.Event()

    def hold(conn: Conn) -> None:
        entered.set()
        gate.wait()

    first = store.writer.put_nowait(Unit(statements=[hold], events=[ev(TID, 1)]))
    await trio.to_thread.run_sync(entered.wait)  # the writer is inside a hop now
    second = store.writer.put_nowait(item_unit(0, 2))
    with trio.CancelScope() as scope:
        scope.cancel()
        await second.wait()
    assert scope.cancelled_caught and not second.done
    gate.set()
    await store.writer.flush()
    await first.wait()
    await second.wait()
    assert await store.read(lambda c: queries.count_items(c, TID)) == 1


async def test_cancelling_the_writer_mid_hop_finishes_the_transaction(backend: Backend) -> None:
    w, conn = make_writer(backend)
    published: list[Event] = []
    w.set_on_commit(published.extend)
    gate, entered = threading.Event(), threading.Event()

    def hold(c: Conn) -> None:
        c.execute("INSERT INTO meta VALUES('in', 'hop')")
        entered.set()
        gate.wait()

    async with trio.open_nursery() as n:
        await n.start(w.run)
        first = w.put_nowait(Unit(statements=[hold], events=[ev(TID, 1)]))
        await trio.to_thread.run_sync(entered.wait)
        n.cancel_scope.cancel()
        second = w.put_nowait(Unit(events=[ev(TID, 2)]))
        gate.set()
    # The hop ran to completion and was published; nothing was left half-written.
    await first.wait()
    assert [e.seq for e in published] == [1]
    with pytest.raises(StoreClosed):
        await second.wait()
    assert not conn.in_transaction
    assert conn.execute("SELECT value FROM meta WHERE key = 'in'").fetchone() == ("hop",)
    assert conn.execute("SELECT seq FROM events").fetchall() == [(1,)]
    with pytest.raises(StoreClosed):
        w.put_nowait(Unit())
    conn.close()


async def test_on_commit_failure_does_not_stop_the_writer(store: Store) -> None:
    def broken(events: list[Event]) -> None:
        raise RuntimeError("hub bug")

    store.writer.set_on_commit(broken)
    await store.writer.commit(Unit(events=[ev(TID, 1)]))
    await store.writer.commit(Unit(events=[ev(TID, 2)]))
    assert await store.read(lambda c: queries.last_seq(c, TID)) == 2


async def test_statements_run_before_the_units_events(store: Store) -> None:
    seen: list[int] = []

    def count(c: Conn) -> None:
        seen.append(c.execute("SELECT count(*) FROM events").fetchone()[0])

    w = store.writer
    w.put_nowait(Unit(events=[ev(TID, 1), ev(TID, 2)]))
    w.put_nowait(Unit(statements=[count], events=[ev(TID, 3)]))
    await w.flush()
    assert seen == [2]  # earlier units' events are visible; its own come after


async def test_a_slow_batch_is_logged_with_its_size(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    import structlog

    from echsd.store import writer as writer_module

    monkeypatch.setattr(writer_module, "SLOW_BATCH_S", 0.02)

    def slow_io(conn: Conn) -> None:  # as a commit stalled behind a checkpoint's fsync would be
        time.sleep(0.05)

    with structlog.testing.capture_logs() as logs:
        await store.writer.commit(Unit(statements=[slow_io], events=[ev(TID, 1), ev(TID, 2)]))
        await store.writer.commit(Unit(events=[ev(TID, 3)]))
    slow = [entry for entry in logs if entry["event"] == "store_batch_slow"]
    assert len(slow) == 1 and slow[0]["events"] == 2 and slow[0]["statements"] == 1 and slow[0]["duration_s"] >= 0.05
    assert store.writer.stats.slowest_batch_s >= 0.05
