"""Shared test helpers: settings for a temp daemon, event watching, invariant checks."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable

import trio

from echsd.events import Event
from echsd.settings import Settings, load_settings
from echsd.threads.history import check_invariants

WAIT_S = 15.0

TEST_STORE_ENV = "ECHS_TEST_STORE"  # "sqlite" (default) or "postgresql": the store test daemons use
PG_SOCKET_ENV = "ECHS_TEST_PG_HOST"  # the session cluster's socket dir (set by the pg_cluster fixture)


def one_event_per_delta(state_dir: Path) -> Path:
    """``state_dir``, made, for a daemon that sends one event per model delta
    (``[tuning] join_deltas = false``): for tests that count or flood delta events."""
    state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    (state_dir / "config.toml").write_text("[tuning]\njoin_deltas = false\n")
    return state_dir


def mock_directive(step_or_steps: Any) -> str:
    """A mock upstream script line (see docs/mock-upstream.md)."""
    if isinstance(step_or_steps, list):
        step_or_steps = {"steps": step_or_steps}
    return "mock: " + json.dumps(step_or_steps)


def suite_store() -> str:
    """Which store the daemon-level tests run on: ``ECHS_TEST_STORE``, default sqlite."""
    value = os.environ.get(TEST_STORE_ENV) or "sqlite"
    if value not in ("sqlite", "postgresql"):
        raise RuntimeError(f"{TEST_STORE_ENV}={value!r}: expected sqlite or postgresql")
    return value


def store_url_for(state_dir: Path) -> str | None:
    """The store of a test daemon on ``state_dir``: None for the default (its SQLite file),
    or, with ECHS_TEST_STORE=postgresql, a database of its own in the session's cluster
    (created on first use; the same one for every daemon and process on that state dir)."""
    if suite_store() != "postgresql":
        return None
    from tests.pgcluster import create_database, database_for

    socket_dir = os.environ.get(PG_SOCKET_ENV)
    if not socket_dir:
        raise RuntimeError(f"{TEST_STORE_ENV}=postgresql but no cluster: {PG_SOCKET_ENV} is unset")
    return create_database(Path(socket_dir), database_for(str(Path(state_dir).resolve())))


def store_target(state_dir: Path) -> str | Path:
    """What ``Store.open`` opens to see a test daemon's data on ``state_dir``."""
    return store_url_for(state_dir) or Path(state_dir) / "echsd.db"


def make_settings(state_dir: Path, base_url: str | None, **flags: Any) -> Settings:
    """Daemon settings for tests: isolated state dir, no credentials, the given endpoint,
    the suite's store (``store_url_for``)."""
    env = {"HOME": str(state_dir / "home"), "CODEX_HOME": str(state_dir / "no-codex")}
    values: dict[str, Any] = {"state_dir": str(state_dir)}
    store = store_url_for(state_dir)
    if store is not None:
        values["store"] = store
    if base_url is not None:
        values.update(provider="openai", base_url=base_url)
    else:
        values.update(provider="mock")
    values.update(flags)
    return load_settings(values, env)


class Watch:
    """Every committed event of one thread, replayed from the log and then live, in seq order.

    Listening starts before the replay read, and events are de-duplicated by seq, so
    nothing is missed at the seam (the same rule the wire subscriptions follow).
    """

    def __init__(self, daemon: Any, thread_id: str) -> None:
        self.daemon = daemon
        self.thread_id = thread_id
        self.events: list[Event] = []
        self._changed = trio.Event()
        self._listening = None

    async def __aenter__(self) -> "Watch":
        from echsd.store import queries

        buffered: list[Event] = []
        self._listening = self.daemon.hub.listen(self.thread_id, buffered.append)
        stored = await self.daemon.store.read(lambda conn: queries.read_events(conn, self.thread_id, 0, None))
        for entry in stored:
            if isinstance(entry, Event):
                self._add(entry)
        for event in buffered:
            self._add(event)
        self._listening.close()
        self._listening = self.daemon.hub.listen(self.thread_id, self._add)
        return self

    async def __aexit__(self, *exc: Any) -> None:
        if self._listening is not None:
            self._listening.close()

    def _add(self, event: Event) -> None:
        if self.events and event.seq <= self.events[-1].seq:
            return
        self.events.append(event)
        self._changed.set()
        self._changed = trio.Event()

    def of_type(self, *types: str) -> list[Event]:
        return [e for e in self.events if e.type in types]

    async def wait_for(self, predicate: Callable[[Event], bool], timeout: float = WAIT_S, after_seq: int = 0) -> Event:
        with trio.fail_after(timeout):
            while True:
                for event in self.events:
                    if event.seq > after_seq and predicate(event):
                        return event
                await self._changed.wait()

    async def wait_type(self, event_type: str, timeout: float = WAIT_S, after_seq: int = 0, **data: Any) -> Event:
        return await self.wait_for(
            lambda e: e.type == event_type and all(e.data.get(k) == v for k, v in data.items()),
            timeout=timeout,
            after_seq=after_seq,
        )

    async def wait_count(self, event_type: str, count: int, timeout: float = WAIT_S) -> list[Event]:
        with trio.fail_after(timeout):
            while len(self.of_type(event_type)) < count:
                await self._changed.wait()
        return self.of_type(event_type)

    @property
    def last_seq(self) -> int:
        return self.events[-1].seq if self.events else 0


async def check_thread_invariants(daemon: Any, thread_id: str) -> None:
    """CONTRACT.md 2.4 on one thread: contiguous seq, calls paired, inputs resolved once."""
    from echsd.store import Gap, queries

    await daemon.store.writer.flush()
    entries = await daemon.store.read(lambda conn: queries.read_events(conn, thread_id, 0, None))
    seqs: list[int] = []
    for entry in entries:
        if isinstance(entry, Gap):
            seqs.extend(range(entry.from_seq, entry.to_seq + 1))
        else:
            seqs.append(entry.seq)
    assert seqs == list(range(1, len(seqs) + 1)), f"seq not contiguous: {seqs[:50]}"
    history = await daemon.ops.history(thread_id)
    problems = check_invariants(history)
    assert not problems, problems
    events = [e for e in entries if isinstance(e, Event)]
    outcomes: dict[str, int] = {}
    for event in events:
        if event.type in ("input.delivered", "input.dropped"):
            outcomes[event.data["input_id"]] = outcomes.get(event.data["input_id"], 0) + 1
    assert all(count == 1 for count in outcomes.values()), outcomes
    inputs = await daemon.store.read(lambda conn: queries.load_inputs(conn, thread_id, ("queued", "steering", "delivered", "dropped")))
    for row in inputs:
        if row.status in ("delivered", "dropped"):
            assert outcomes.get(row.input_id) == 1, f"input {row.input_id} is {row.status} without exactly one event"
        else:
            assert row.input_id not in outcomes, f"input {row.input_id} is {row.status} but was resolved"


def conversation(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A history (or a request's input) without the context messages echsd sends before a
    thread's first input: project instructions and the environment (``threads/context.py``)."""
    from echsd.threads.context import is_context_message

    return [item for item in items if not is_context_message(item)]
