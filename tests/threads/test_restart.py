"""Restart recovery and retention: stop a daemon, start another on the same state dir."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from echsd.daemon import Daemon
from echsd.events import Event
from echsd.store import Gap, queries
from tests.helpers import Watch, check_thread_invariants, make_settings, mock_directive, one_event_per_delta

SLOW_TEXT = {"text": " ".join(f"w{i}" for i in range(400)), "deltas": 400, "delay_ms": 10}


async def start(nursery: trio.Nursery, state_dir: Path, base_url: str) -> Daemon:
    daemon = Daemon(make_settings(state_dir, base_url))
    await nursery.start(daemon.run)
    return daemon


@pytest.fixture
async def daemon(tmp_path: Path, mock_upstream: Any, nursery: trio.Nursery) -> Any:
    """One event per model delta: these tests count delta events."""
    instance = await start(nursery, one_event_per_delta(tmp_path / "state"), mock_upstream.base_url)
    yield instance
    await stop(instance)


async def stop(daemon: Daemon) -> None:
    daemon.request_stop()
    with trio.fail_after(10):
        await daemon.wait_stopped()


async def test_shutdown_interrupts_turn_and_queue_resumes_after_restart(
    tmp_path: Path, mock_upstream: Any, nursery: trio.Nursery, workdir: Path
) -> None:
    state = tmp_path / "state"
    first = await start(nursery, state, mock_upstream.base_url)
    tid = (await first.ops.create_thread(cwd=str(workdir)))["thread_id"]
    async with Watch(first, tid) as watch:
        await first.ops.send(tid, mock_directive(SLOW_TEXT))
        await watch.wait_type("turn.delta")
        queued = await first.ops.send(tid, mock_directive({"text": "after restart"}), mode="queue")
        last_seq = watch.last_seq
    await stop(first)

    second = await start(nursery, state, mock_upstream.base_url)
    async with Watch(second, tid) as watch:
        done = await watch.wait_type("turn.completed")
    assert done.data["final_text"] == "after restart"
    interrupted = watch.of_type("turn.interrupted")
    assert [e.data["reason"] for e in interrupted] == ["shutdown"]
    delivered = [e.data["input_id"] for e in watch.of_type("input.delivered")]
    assert delivered[-1] == queued["input_id"]
    assert watch.events[0].seq == 1 and all(b.seq == a.seq + 1 for a, b in zip(watch.events, watch.events[1:]))
    assert watch.last_seq > last_seq
    await check_thread_invariants(second, tid)
    await stop(second)


async def test_paused_state_children_and_idempotency_survive_restart(
    tmp_path: Path, mock_upstream: Any, nursery: trio.Nursery, workdir: Path
) -> None:
    state = tmp_path / "state"
    first = await start(nursery, state, mock_upstream.base_url)
    parent = (await first.ops.create_thread(cwd=str(workdir)))["thread_id"]
    child = (await first.ops.create_thread(cwd=str(workdir), parent=parent))["thread_id"]
    await first.ops.pause(child)
    held = await first.ops.send(child, mock_directive({"text": "held"}), client_msg_id="m-1")
    assert held["disposition"] == "queued"
    await stop(first)

    second = await start(nursery, state, mock_upstream.base_url)
    assert (await second.ops.get_thread(child))["state"] == "paused"
    assert (await second.ops.get_thread(child))["parent"] == parent
    assert (await second.ops.get_thread(parent))["children"] == [child]
    assert (await second.ops.get_thread(child))["queued"] == 1
    again = await second.ops.send(child, mock_directive({"text": "held"}), client_msg_id="m-1")
    assert again == held
    async with Watch(second, child) as watch:
        await second.ops.resume(child)
        done = await watch.wait_type("turn.completed")
    assert done.data["final_text"] == "held"
    assert len(watch.of_type("input.delivered")) == 1
    await check_thread_invariants(second, child)
    await stop(second)


async def test_retention_folds_old_deltas_into_a_gap(
    tmp_path: Path, mock_upstream: Any, nursery: trio.Nursery, workdir: Path
) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "config.toml").write_text("[tuning]\nretained_deltas = 100\njoin_deltas = false\n")
    daemon = await start(nursery, state, mock_upstream.base_url)
    tid = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    async with Watch(daemon, tid) as watch:
        for turn in range(3):
            await daemon.ops.send(tid, mock_directive({"repeat": {"chunk": "x", "count": 600}}))
            await watch.wait_count("turn.completed", turn + 1)
    await daemon.store.writer.flush()
    entries = await daemon.store.read(lambda conn: queries.read_events(conn, tid, 0, None))
    gaps = [e for e in entries if isinstance(e, Gap)]
    kept_deltas = [e for e in entries if isinstance(e, Event) and e.type == "turn.delta"]
    assert gaps and all(g.reason == "retention" for g in gaps)
    assert len(kept_deltas) <= 100 + 600
    # Every completed item is still there: the text of folded deltas lives in the items.
    assert [e.data["final_text"] for e in watch.of_type("turn.completed")] == ["x" * 600] * 3
    replay = await daemon.ops.thread_events(tid, since=0)
    gap_events = [e for e in replay if e["event"] == "events.gap"]
    assert gap_events and gap_events[0]["data"]["from_seq"] == gap_events[0]["seq"] + 1
    await check_thread_invariants(daemon, tid)
    await stop(daemon)


async def test_replay_of_ten_thousand_events_matches_live(daemon: Any, workdir: Path) -> None:
    tid = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    live: list[Event] = []
    listening = daemon.hub.listen(tid, live.append)
    async with Watch(daemon, tid) as watch:
        await daemon.ops.send(tid, mock_directive({"repeat": {"chunk": "y", "count": 10_000}}))
        await watch.wait_type("turn.completed")
    listening.close()
    replayed: list[dict[str, Any]] = []
    since = 0
    while True:
        page = await daemon.ops.thread_events(tid, since=since, limit=3000)
        if not page:
            break
        replayed.extend(page)
        since = page[-1]["seq"]
    assert len(replayed) > 10_000
    assert replayed == [event.envelope() for event in watch.events]
    assert [e.envelope() for e in live] == replayed[1:]  # live listening began after thread.created
