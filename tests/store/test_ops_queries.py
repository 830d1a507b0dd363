"""Statement builders and queries round-trip through a real database file."""

from __future__ import annotations

import orjson
import pytest

from echsd.events import Event
from echsd.store import BlackboardRow, InputRow, Store, StoreConflict, StoreError, ThreadRow, Unit, open_store, ops, queries

from .conftest import Backend, ev

T1, T2 = "thr_0000000000000001", "thr_0000000000000002"
TYPE_OF_DATA = {
    "sqlite": "SELECT typeof(data) FROM events LIMIT 1",
    "postgresql": "SELECT pg_typeof(data)::text FROM events LIMIT 1",
}


def thread(tid: str, parent: str | None = None, created_at: float = 1.0, **kw: object) -> ThreadRow:
    return ThreadRow(
        thread_id=tid,
        parent=parent,
        created_at=created_at,
        state=kw.get("state", "idle"),  # type: ignore[arg-type]
        config={"model": "m", "cwd": "/tmp", "tools": ["exec_command"]},
        usage={"input_tokens": 3},
        active_turn=None,
        extra={},
        updated_at=created_at,
    )


def inp(
    input_id: str, position: int, tid: str = T1, status: str = "queued", client: str | None = None
) -> InputRow:
    return InputRow(
        input_id=input_id,
        thread_id=tid,
        client_msg_id=client,
        mode="queue",
        text=f"text {input_id}",
        attachments=[{"path": "a.png"}],
        status=status,
        position=position,
        created_at=float(position),
    )


async def test_threads_round_trip_and_upsert(store: Store) -> None:
    await store.writer.commit(
        Unit(
            statements=[
                ops.upsert_thread(thread(T2, parent=T1, created_at=2.0)),
                ops.upsert_thread(thread(T1)),
            ]
        )
    )
    rows = await store.read(queries.load_threads)
    assert [r.thread_id for r in rows] == [T1, T2]  # created_at order
    assert rows[1].parent == T1 and rows[1].config["tools"] == ["exec_command"]
    changed = thread(T1, created_at=99.0)
    changed.state, changed.active_turn, changed.usage = "running", "turn_1", {"input_tokens": 10}
    changed.updated_at = 5.0
    await store.writer.commit(Unit(statements=[ops.upsert_thread(changed)]))
    row = await store.read(lambda c: queries.get_thread(c, T1))
    assert row is not None
    assert (row.state, row.active_turn, row.usage, row.updated_at) == (
        "running",
        "turn_1",
        {"input_tokens": 10},
        5.0,
    )
    assert row.created_at == 1.0  # kept from the first insert
    assert await store.read(lambda c: queries.get_thread(c, "thr_missing")) is None


async def test_items_append_count_replace(store: Store) -> None:
    items = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": str(i)}]}
        for i in range(5)
    ]
    await store.writer.commit(
        Unit(statements=[ops.append_items(T1, 0, items[:1], turn_id="turn_a")])
    )
    await store.writer.commit(
        Unit(statements=[ops.append_items(T1, 1, items[1:], turn_id="turn_b")])
    )
    await store.writer.commit(Unit(statements=[ops.append_items(T2, 0, [])]))
    assert await store.read(lambda c: queries.load_items(c, T1)) == items
    assert await store.read(lambda c: queries.count_items(c, T1)) == 5
    assert await store.read(lambda c: queries.count_items(c, T2)) == 0
    # Appending at a taken position fails the unit instead of overwriting history.
    with pytest.raises(StoreError):
        await store.writer.commit(Unit(statements=[ops.append_items(T1, 4, [{"x": 1}])]))
    summary = [{"type": "compaction", "summary": "short"}]
    await store.writer.commit(Unit(statements=[ops.replace_items(T1, summary)]))
    assert await store.read(lambda c: queries.load_items(c, T1)) == summary
    await store.writer.commit(Unit(statements=[ops.append_items(T1, 1, [items[0]])]))
    assert await store.read(lambda c: queries.load_items(c, T1)) == summary + items[:1]


async def test_builders_snapshot_values_when_built(store: Store) -> None:
    item = {"type": "message", "content": "before"}
    statement = ops.append_items(T1, 0, [item])
    item["content"] = "after"
    await store.writer.commit(Unit(statements=[statement]))
    assert await store.read(lambda c: queries.load_items(c, T1)) == [
        {"type": "message", "content": "before"}
    ]


async def test_inputs_queue_order_status_and_dedup(store: Store) -> None:
    rows = [
        inp("in_c", 3),
        inp("in_a", 1, client="cm1"),
        inp("in_b", 2, status="steering"),
        inp("in_x", 1, tid=T2),
    ]
    await store.writer.commit(Unit(statements=[ops.insert_input(r) for r in rows]))
    pending = await store.read(lambda c: queries.load_inputs(c, T1))
    assert [r.input_id for r in pending] == ["in_a", "in_b", "in_c"]
    assert pending[0].attachments == [{"path": "a.png"}]
    every = await store.read(queries.load_inputs)
    assert [r.input_id for r in every] == ["in_a", "in_b", "in_c", "in_x"]
    await store.writer.commit(
        Unit(statements=[ops.update_input("in_a", status="delivered", turn_id="turn_1")])
    )
    await store.writer.commit(
        Unit(statements=[ops.update_input("in_c", status="dropped", reason="killed")])
    )
    pending = await store.read(lambda c: queries.load_inputs(c, T1))
    assert [r.input_id for r in pending] == ["in_b"]
    done = await store.read(lambda c: queries.load_inputs(c, T1, statuses=("delivered", "dropped")))
    assert [(r.input_id, r.status, r.turn_id, r.reason) for r in done] == [
        ("in_a", "delivered", "turn_1", None),
        ("in_c", "dropped", None, "killed"),
    ]
    assert len(await store.read(lambda c: queries.load_inputs(c, T1, statuses=None))) == 3
    found = await store.read(lambda c: queries.find_input(c, T1, "cm1"))
    assert found is not None and found.input_id == "in_a"
    assert await store.read(lambda c: queries.find_input(c, T2, "cm1")) is None
    got = await store.read(lambda c: queries.get_input(c, "in_b"))
    assert got is not None and got.status == "steering"
    # The same client_msg_id twice on one thread is refused by the schema.
    with pytest.raises(StoreError):
        await store.writer.commit(
            Unit(statements=[ops.insert_input(inp("in_dup", 9, client="cm1"))])
        )
    await store.writer.commit(
        Unit(statements=[ops.insert_input(inp("in_ok", 9, tid=T2, client="cm1"))])
    )
    # An unknown status is refused too.
    with pytest.raises(StoreError):
        await store.writer.commit(Unit(statements=[ops.update_input("in_b", status="lost")]))


def bb(key: str, value: object, version: int, writer: str | None = T1, ts: float = 10.0, deleted: bool = False) -> BlackboardRow:
    return BlackboardRow(key, None if deleted else value, version, writer, ts, deleted)


async def test_blackboard_writes_are_guarded_and_logged(store: Store) -> None:
    write = ops.write_blackboard
    await store.writer.commit(
        Unit(
            statements=[
                write(bb("team/a", {"x": [1, 2]}, 1), seq=1, base_version=0, keep=100),
                write(bb("team/b", "text", 1, None, 11.0), seq=2, base_version=0, keep=100),
                write(bb("teamwork", 3, 1, T2, 12.0), seq=3, base_version=0, keep=100),
                write(bb("other", None, 1, T2, 12.0), seq=4, base_version=0, keep=100),
                ops.set_meta("daemon_id", "d1"),
            ]
        )
    )
    await store.writer.commit(Unit(statements=[write(bb("team/a", {"x": []}, 2, T2, 13.0), seq=5, base_version=1, keep=100)]))
    entry = await store.read(lambda c: queries.get_blackboard(c, "team/a"))
    assert entry == bb("team/a", {"x": []}, 2, T2, 13.0)
    other = await store.read(lambda c: queries.get_blackboard(c, "other"))
    assert other is not None and other.value is None and not other.deleted

    # The database holds the compare-and-set: a stale base version, a create over an
    # existing key or a seq already logged fail the unit and change nothing.
    for stale in (
        write(bb("team/a", "lost", 2), seq=6, base_version=1, keep=100),
        write(bb("team/b", "lost", 1), seq=6, base_version=0, keep=100),
        write(bb("team/b", "lost", 2), seq=5, base_version=1, keep=100),
    ):
        with pytest.raises(StoreConflict):
            await store.writer.commit(Unit(statements=[stale]))
    assert await store.read(lambda c: queries.get_blackboard(c, "team/a")) == entry
    assert await store.read(queries.blackboard_log_bounds) == (1, 5)

    # A delete leaves a tombstone; the key's next version goes on from it.
    await store.writer.commit(Unit(statements=[write(bb("team/b", None, 2, deleted=True), seq=6, base_version=1, keep=100)]))
    await store.writer.commit(Unit(statements=[write(bb("team/b", "again", 3), seq=7, base_version=2, keep=100)]))
    loaded = await store.read(queries.load_blackboard)
    assert [(e.key, e.version, e.deleted) for e in loaded] == [("other", 1, False), ("team/a", 2, False), ("team/b", 3, False), ("teamwork", 1, False)]

    first, changes = await store.read(lambda c: queries.read_blackboard_log(c, 0, "team/"))
    assert first == 1
    assert [(c.seq, c.entry.key, c.entry.value, c.entry.deleted) for c in changes] == [
        (1, "team/a", {"x": [1, 2]}, False),
        (2, "team/b", "text", False),
        (5, "team/a", {"x": []}, False),
        (6, "team/b", None, True),
        (7, "team/b", "again", False),
    ]
    _, page = await store.read(lambda c: queries.read_blackboard_log(c, 2, "team", limit=2))
    assert [c.seq for c in page] == [3, 5]
    # Retention: the log keeps the newest ``keep`` changes.
    await store.writer.commit(Unit(statements=[write(bb("z", 1, 1), seq=8, base_version=0, keep=3)]))
    assert await store.read(queries.blackboard_log_bounds) == (6, 8)
    assert await store.read(lambda c: queries.get_meta(c, "daemon_id")) == "d1"
    assert await store.read(lambda c: queries.get_meta(c, "nope")) is None


def test_prefix_end_bounds_every_key_with_the_prefix() -> None:
    assert queries.prefix_end("team/") == "team0"
    assert queries.prefix_end("a\U0010ffff") == "b"
    assert queries.prefix_end("\U0010ffff") is None
    assert queries.prefix_end("\ud7ff") == "\ue000"


async def test_event_data_round_trips_and_last_seq(store: Store) -> None:
    data = {
        "turn_id": "turn_1",
        "item": {"type": "message", "content": [{"text": "héllo ✓"}]},
        "n": 1.5,
        "none": None,
    }
    await store.writer.commit(
        Unit(events=[Event(T1, 1, "item.completed", 123.25, data), ev(T1, 2)])
    )
    assert await store.read(lambda c: queries.last_seq(c, T1)) == 2
    assert await store.read(lambda c: queries.last_seq(c, T2)) == 0
    assert await store.read(lambda c: queries.last_seqs(c, [T1, T2])) == {T1: 2, T2: 0}
    events = await store.read(lambda c: queries.read_events(c, T1, 0))
    assert events[0] == Event(T1, 1, "item.completed", 123.25, data)
    raw = await store.read(lambda c: c.execute(TYPE_OF_DATA[c.dialect]).fetchone()[0])
    assert raw == {"sqlite": "blob", "postgresql": "bytea"}[store.dialect]
    assert await store.read(lambda c: queries.count_events(c, T1)) == 2


async def test_read_events_after_and_limit(store: Store) -> None:
    await store.writer.commit(Unit(events=[ev(T1, i) for i in range(1, 11)]))
    got = await store.read(lambda c: queries.read_events(c, T1, 4, limit=3))
    assert [e.seq for e in got] == [5, 6, 7]
    assert await store.read(lambda c: queries.read_events(c, T1, 10)) == []
    assert await store.read(lambda c: queries.read_events(c, T1, 0, limit=0)) == []


async def test_read_events_all_orders_by_time(store: Store) -> None:
    await store.writer.commit(
        Unit(
            events=[
                ev(T1, 1, ts=1.0),
                ev(T2, 1, ts=1.0),
                ev(T2, 2, ts=2.0),
                ev(T1, 2, ts=3.0),
                ev(T1, 3, ts=3.0),
            ]
        )
    )
    got = await store.read(queries.read_events_all)
    assert [(e.thread_id, e.seq) for e in got] == [(T1, 1), (T2, 1), (T2, 2), (T1, 2), (T1, 3)]
    got = await store.read(lambda c: queries.read_events_all(c, after_seq=1, limit=2))
    assert [(e.thread_id, e.seq) for e in got] == [(T2, 2), (T1, 2)]


async def test_integrity_check_reports_ok(db_path: object) -> None:
    with open_store(db_path) as s:  # type: ignore[arg-type]  # SQLite's PRAGMA
        assert s.read_sync(queries.integrity_check) == "ok"


def test_read_sync_runs_in_a_snapshot(backend: Backend) -> None:
    with backend.open() as s:
        assert s.read_sync(lambda c: c.in_transaction) is True
        with pytest.raises(StoreError):
            s.read_sync(lambda c: c.execute("SELECT * FROM nope"))
        assert s.read_sync(lambda c: c.execute("SELECT 1").fetchone()) == (1,)  # pool still fine


async def test_batched_event_insert_round_trips_exactly(store: Store) -> None:
    """Many events in one batch take the one-statement JSON path: values must survive."""
    datas = [
        {
            "delta": 'é✓ "q" \\ \n \u2028 😀 \x00',
            "f": 0.1,
            "big": 2**62,
            "neg": -0.0,
            "nested": {"a": [None, True]},
        },
        {"float": 1e300, "tiny": 5e-324, "ts_like": 1795325287.4911563},
        {},
    ] * 10
    events = [
        Event(T1, i + 1, "turn.delta", 1795325287.123456 + i / 7, d) for i, d in enumerate(datas)
    ]
    await store.writer.commit(Unit(events=events))
    got = await store.read(lambda c: queries.read_events(c, T1, 0))
    assert got == events
    raw = await store.read(
        lambda c: [r[0] for r in c.execute("SELECT data FROM events ORDER BY seq")]
    )
    assert raw == [orjson.dumps(d) for d in datas]  # stored as orjson's bytes
