"""Retention: fold_deltas deletes old delta events and read_events reports the gaps."""

from __future__ import annotations

from echsd.events import Event
from echsd.store import Gap, Store, Unit, ops, queries

from .conftest import ev

T = "thr_00000000000000f0"
T_OTHER = "thr_00000000000000f1"


def shape(items: list[Event | Gap]) -> list[object]:
    return [(i.from_seq, i.to_seq) if isinstance(i, Gap) else i.seq for i in items]


async def write(store: Store, *events: Event) -> None:
    await store.writer.commit(Unit(events=list(events)))


async def fold(store: Store, keep: int, thread_id: str = T, **kw: object) -> None:
    await store.writer.commit(Unit(statements=[ops.fold_deltas(thread_id, keep, **kw)]))  # type: ignore[arg-type]


async def gaps(store: Store, thread_id: str = T) -> list[tuple[int, int, str]]:
    return await store.read(
        lambda c: c.execute(
            "SELECT from_seq, to_seq, reason FROM event_gaps WHERE thread_id = ? ORDER BY from_seq",
            (thread_id,),
        ).fetchall()
    )


async def test_fold_keeps_newest_and_records_runs(store: Store) -> None:
    # 1 item, 2-6 deltas, 7 item, 8-10 deltas, 11 turn end; another thread is untouched.
    await write(
        store,
        ev(T, 1, "item.completed"),
        *(ev(T, s, "turn.delta", delta="x") for s in range(2, 7)),
        ev(T, 7, "item.completed"),
        ev(T, 8, "tool.output"),
        ev(T, 9, "turn.reasoning_delta"),
        ev(T, 10, "turn.delta"),
        ev(T, 11, "turn.completed"),
        *(ev(T_OTHER, s) for s in range(1, 6)),
    )
    await fold(store, keep=2)
    assert await gaps(store) == [(2, 6, "retention"), (8, 8, "retention")]
    got = await store.read(lambda c: queries.read_events(c, T, 0))
    assert shape(got) == [1, (2, 6), 7, (8, 8), 9, 10, 11]
    assert got[1] == Gap(T, 2, 6, "retention")
    assert await store.read(lambda c: queries.count_events(c, T)) == 5
    assert await store.read(lambda c: queries.last_seq(c, T)) == 11
    assert await store.read(lambda c: queries.count_events(c, T_OTHER)) == 5
    # Folding again with room to spare changes nothing.
    await fold(store, keep=2)
    await fold(store, keep=50)
    assert await gaps(store) == [(2, 6, "retention"), (8, 8, "retention")]


async def test_new_runs_merge_with_adjacent_gaps(store: Store) -> None:
    await write(
        store,
        ev(T, 1, "item.completed"),
        *(ev(T, s) for s in range(2, 6)),
        ev(T, 6, "turn.completed"),
    )
    await fold(store, keep=2)  # deletes 2, 3
    assert await gaps(store) == [(2, 3, "retention")]
    await write(store, *(ev(T, s) for s in range(7, 10)))
    await fold(store, keep=1)  # deletes 4, 5 (merge into 2-5), then 7, 8 (6 survives)
    assert await gaps(store) == [(2, 5, "retention"), (7, 8, "retention")]
    assert shape(await store.read(lambda c: queries.read_events(c, T, 0))) == [
        1,
        (2, 5),
        6,
        (7, 8),
        9,
    ]


async def test_a_run_bridging_two_gaps_merges_all_three(store: Store) -> None:
    await write(
        store,
        ev(T, 1, "item.completed"),
        ev(T, 2, "turn.delta"),
        ev(T, 3, "tool.output"),
        ev(T, 4, "turn.delta"),
        ev(T, 5, "item.completed"),
    )
    await fold(store, keep=0, types={"turn.delta"})
    assert await gaps(store) == [(2, 2, "retention"), (4, 4, "retention")]
    await fold(store, keep=0, types={"tool.output"})
    assert await gaps(store) == [(2, 4, "retention")]
    assert shape(await store.read(lambda c: queries.read_events(c, T, 0))) == [1, (2, 4), 5]


async def test_gaps_count_toward_limit_and_clip_at_after_seq(store: Store) -> None:
    await write(
        store,
        ev(T, 1, "item.completed"),
        *(ev(T, s) for s in range(2, 7)),
        ev(T, 7, "item.completed"),
        ev(T, 8, "turn.completed"),
    )
    await fold(store, keep=0)
    read = lambda after, limit=None: store.read(lambda c: queries.read_events(c, T, after, limit))  # noqa: E731
    assert shape(await read(0, 2)) == [1, (2, 6)]
    assert shape(await read(0, 1)) == [1]
    assert shape(await read(1, 1)) == [(2, 6)]
    assert shape(await read(3)) == [(4, 6), 7, 8]  # a client past part of the gap
    assert shape(await read(6)) == [7, 8]
    assert shape(await read(8)) == []


async def test_last_seq_counts_folded_tail(store: Store) -> None:
    await write(store, ev(T, 1, "item.completed"), ev(T, 2), ev(T, 3))
    await fold(store, keep=0)
    assert await store.read(lambda c: queries.count_events(c, T)) == 1
    assert await store.read(lambda c: queries.last_seq(c, T)) == 3  # never hand out 2 or 3 again
    assert shape(await store.read(lambda c: queries.read_events(c, T, 0))) == [1, (2, 3)]


async def test_fold_and_new_events_in_one_unit(store: Store) -> None:
    await write(store, *(ev(T, s) for s in range(1, 5)))
    # Statements run before the unit's own events: the fold sees 1-4, then 5 is added.
    await store.writer.commit(Unit(statements=[ops.fold_deltas(T, 1)], events=[ev(T, 5)]))
    assert shape(await store.read(lambda c: queries.read_events(c, T, 0))) == [(1, 3), 4, 5]


async def test_read_events_all_places_gaps_by_time(store: Store) -> None:
    await write(
        store,
        ev(T, 1, "item.completed", ts=1.0),
        ev(T, 2, ts=2.0),
        ev(T, 3, ts=3.0),
        ev(T_OTHER, 1, ts=2.5),
        ev(T, 4, "turn.completed", ts=4.0),
    )
    await fold(store, keep=0)
    got = await store.read(queries.read_events_all)
    assert [(i.thread_id, shape([i])[0]) for i in got] == [
        (T, 1),
        (T_OTHER, 1),  # ts 2.5 sorts before the gap, whose ts is its last event's (3.0)
        (T, (2, 3)),
        (T, 4),
    ]
    got = await store.read(lambda c: queries.read_events_all(c, after_seq=2))
    assert [shape([i])[0] for i in got] == [(3, 3), 4]


async def test_gap_envelope_is_an_events_gap() -> None:
    env = Gap(T, 5, 9, "retention").envelope(ts=1.0)
    assert env == {
        "event": "events.gap",
        "thread_id": T,
        "seq": 4,
        "ts": 1.0,
        "data": {"from_seq": 5, "to_seq": 9, "reason": "retention"},
    }


async def test_fold_by_bytes_keeps_the_newest_that_fit(store: Store) -> None:
    # 2-6: 1000-byte chunks; 1 and 7 are items, never folded.
    await write(
        store,
        ev(T, 1, "item.completed", text="y" * 5000),
        *(ev(T, s, "tool.output", chunk="x" * 1000) for s in range(2, 7)),
        ev(T, 7, "item.completed"),
    )
    await fold(store, keep=100, keep_bytes=2500)  # two chunks fit (with their JSON), a third does not
    assert await gaps(store) == [(2, 4, "retention")]
    assert shape(await store.read(lambda c: queries.read_events(c, T, 0))) == [1, (2, 4), 5, 6, 7]
    await fold(store, keep=100, keep_bytes=2500)  # nothing more to do
    await fold(store, keep=1, keep_bytes=10**9)  # the count still applies
    assert await gaps(store) == [(2, 5, "retention")]
    await fold(store, keep=100, keep_bytes=0)
    assert shape(await store.read(lambda c: queries.read_events(c, T, 0))) == [1, (2, 6), 7]
