"""The replay/live seam: whatever interleaving of commits and store reads, a subscriber
gets exactly the events after ``since``, in order, once each."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from echsd.events import Event
from echsd.wire.follow import ALL, Follow

THREADS = ["thr_a", "thr_b", "thr_c"]

steps = st.lists(
    st.one_of(
        st.tuples(st.just("commit"), st.sampled_from(THREADS), st.integers(1, 4)),
        st.tuples(st.just("subscribe"), st.sampled_from([*THREADS, ALL]), st.integers(0, 6) | st.none()),
        st.tuples(st.just("unsubscribe"), st.sampled_from([*THREADS, ALL]), st.none()),
        st.tuples(st.just("read"), st.none(), st.none()),
    ),
    max_size=120,
)


class Model:
    """A store, a hub and the IO shell's replay procedure, driven one step at a time."""

    def __init__(self, max_held: int, page: int) -> None:
        self.follow = Follow(max_held)
        self.page = page
        self.store: dict[str, list[Event]] = {t: [] for t in THREADS}
        self.listeners: set[str] = set()
        self.out: list[tuple[str, int]] = []
        self.marks: list[tuple[int, str, int | None]] = []  # (index in out, key, since)
        self.replay: list[str] | None = None  # threads left to read

    def commit(self, thread: str, count: int) -> None:
        for _ in range(count):
            event = Event(thread, len(self.store[thread]) + 1, "x", 0.0)
            self.store[thread].append(event)
            for key in (thread, ALL):
                if key in self.listeners and self.follow.on_live(event):
                    self.out.append((thread, event.seq))

    def subscribe(self, key: str, since: int | None) -> None:
        self.listeners.add(key)
        self.follow.begin(key, since or 0)
        if since is None:
            if key != ALL:
                self.follow.skip_to(key, len(self.store[key]))
            self.replay = []
        else:
            self.replay = [t for t in THREADS if self.store[t]] if key == ALL else [key]
        self.marks.append((len(self.out), key, since))

    def read(self) -> None:
        """One page of the replay, or its end (``finish``)."""
        assert self.replay is not None
        if self.replay:
            thread = self.replay[0]
            position = self.follow.position(thread)
            page = [e for e in self.store[thread] if e.seq > position][: self.page]
            for event in page:
                if self.follow.replayed(thread, event.seq, event.seq):
                    self.out.append((thread, event.seq))
            if len(page) < self.page:
                self.replay.pop(0)
            return
        held, reread = self.follow.finish()
        if reread:
            self.replay = sorted(reread)
            return
        self.out.extend((e.thread_id, e.seq) for e in held)
        self.replay = None

    def unsubscribe(self, key: str) -> None:
        self.follow.stop(key)
        self.listeners.discard(key)
        self.marks.append((len(self.out), "-" + key, None))


@given(steps, st.integers(1, 5), st.integers(1, 4))
@settings(max_examples=600)
def test_subscribers_get_every_event_after_since_exactly_once(program: list[tuple[str, Any, Any]], max_held: int, page: int) -> None:
    model = Model(max_held, page)
    for kind, arg, extra in program:
        if model.replay is not None and kind in ("subscribe", "unsubscribe"):
            kind = "read"  # requests are handled in order: a replay finishes first
        if kind == "commit":
            model.commit(arg, extra)
        elif kind == "subscribe":
            model.subscribe(arg, extra)
        elif kind == "unsubscribe":
            model.unsubscribe(arg)
        elif model.replay is not None:
            model.read()
    while model.replay is not None:
        model.read()
    model.commit("thr_a", 1)  # live events after the last replay flow too

    for thread in THREADS:
        covering = [(i, key, since) for i, key, since in model.marks if key in (thread, ALL, "-" + thread, "-" + ALL)]
        subscribes = [m for m in covering if not m[1].startswith("-")]
        last_subscribe = subscribes[-1] if subscribes else None
        seqs = [seq for t, seq in model.out if t == thread]
        assert len(seqs) == len(set(seqs)) or covering, seqs
        if last_subscribe is None:
            assert seqs == []
            continue
        start, key, since = last_subscribe
        after = [seq for t, seq in model.out[start:] if t == thread]
        if not model.follow.covers(thread):
            assert after == sorted(set(after))  # stopped early, but never out of order or twice
            continue
        if since is None:  # live only: from wherever the log was at subscribe time
            assert after == list(range(after[0], len(model.store[thread]) + 1)) if after else True
        else:
            assert after == list(range(since + 1, len(model.store[thread]) + 1)), (key, since, after)


def test_overflowing_hold_buffer_asks_for_a_reread() -> None:
    follow = Follow(max_held=2)
    follow.begin("thr_a", 0)
    for seq in (1, 2, 3):
        assert not follow.on_live(Event("thr_a", seq, "x", 0.0))
    held, reread = follow.finish()
    assert held == [] and reread == {"thr_a"}
    for seq in (1, 2, 3):
        assert follow.replayed("thr_a", seq, seq)
    assert follow.finish() == ([], set())
    assert follow.on_live(Event("thr_a", 4, "x", 0.0))
    assert not follow.on_live(Event("thr_a", 4, "x", 0.0))  # a second listener's copy


def test_overflow_rereads_every_thread_whose_events_were_held() -> None:
    model = Model(max_held=1, page=10)
    model.commit("thr_a", 1)
    model.commit("thr_b", 1)
    model.subscribe(ALL, 0)
    model.read()
    model.read()  # both threads read: the replay is about to finish
    model.commit("thr_b", 1)  # held
    model.commit("thr_a", 1)  # overflows the hold: both must be read again
    while model.replay is not None:
        model.read()
    assert sorted(model.out) == [("thr_a", 1), ("thr_a", 2), ("thr_b", 1), ("thr_b", 2)]
