"""Slow clients: bounded backlog, events.gap, a thread never slowed, the library refills gaps."""

from __future__ import annotations

import time
from typing import Any

import pytest
import trio
from trio_websocket import ConnectionClosed

from echsd.wire.client import connect
from tests.helpers import Watch, mock_directive, one_event_per_delta
from tests.wire.helpers import WAIT_S, raw_connection, start_daemon, stop_daemon, token_of

DELTAS = 100_000


@pytest.fixture
async def wired(tmp_path: Any, mock_upstream: Any, nursery: Any) -> Any:
    """One event per model delta: the floods below are floods of events."""
    daemon = await start_daemon(nursery, one_event_per_delta(tmp_path / "state"), mock_upstream.base_url)
    yield daemon
    await stop_daemon(daemon)


async def _timed_turn(daemon: Any, thread_id: str, count: int) -> float:
    started = time.perf_counter()
    async with Watch(daemon, thread_id) as watch:
        await daemon.ops.send(thread_id, "go\n" + mock_directive({"repeat": {"chunk": "x", "count": count}}))
        await watch.wait_type("turn.completed", timeout=120)
    return time.perf_counter() - started


async def test_a_client_that_reads_nothing_neither_slows_a_thread_nor_misses_silently(wired: Any, tmp_path: Any) -> None:
    baseline_thread = (await wired.ops.create_thread(cwd=str(tmp_path)))["thread_id"]
    baseline = await _timed_turn(wired, baseline_thread, DELTAS)

    tid = (await wired.ops.create_thread(cwd=str(tmp_path)))["thread_id"]
    async with raw_connection(wired) as raw:
        await raw.hello(token_of(wired))
        assert (await raw.request("subscribe", {"thread_id": tid, "since": 0}))["ok"]
        with_slow_client = await _timed_turn(wired, tid, DELTAS)  # meanwhile raw reads nothing
        assert with_slow_client < 2 * baseline + 1.0, (baseline, with_slow_client)

        last_seq = (await wired.ops.get_thread(tid))["last_seq"]
        covered = [(event["seq"], event["seq"]) for event in raw.events]  # replayed before the answer
        gaps = []
        with trio.fail_after(WAIT_S):
            while covered[-1][1] < last_seq:
                message = await raw.receive()
                for event in message.get("events", [message]):
                    if event["event"] == "events.gap":
                        gaps.append(event)
                        assert event["seq"] == event["data"]["from_seq"] - 1
                        covered.append((event["data"]["from_seq"], event["data"]["to_seq"]))
                    else:
                        covered.append((event["seq"], event["seq"]))
    assert gaps and all(g["data"]["reason"] == "backpressure" for g in gaps)
    expected = 1
    for first, last in covered:  # every seq was delivered or reported, in order
        assert first == expected
        expected = last + 1
    assert sum(last - first + 1 for first, last in covered if first != last) > DELTAS // 2


async def test_the_client_library_refills_gaps_so_the_consumer_sees_every_event(wired: Any, tmp_path: Any) -> None:
    tid = (await wired.ops.create_thread(cwd=str(tmp_path)))["thread_id"]
    async with connect(state_dir=wired.settings.state_dir) as client:
        async with client.events(tid, max_queued=50) as stream:
            first = await stream.__anext__()  # subscribed; from now on the consumer lags
            await _timed_turn(wired, tid, 5000)
            seqs = [first["seq"]]
            with trio.fail_after(WAIT_S):
                async for event in stream:
                    assert event["event"] != "events.gap"
                    seqs.append(event["seq"])
                    if event["event"] == "turn.completed":
                        break
    assert seqs == list(range(1, len(seqs) + 1))
    assert len(seqs) > 5000


async def test_unresponsive_clients_are_dropped_by_the_heartbeat(tmp_path: Any, mock_upstream: Any, nursery: Any) -> None:
    daemon = await start_daemon(nursery, tmp_path / "state", mock_upstream.base_url, tuning={"heartbeat_s": 0.2})
    tid = (await daemon.ops.create_thread(cwd=str(tmp_path)))["thread_id"]
    async with raw_connection(daemon) as raw:
        await raw.hello(token_of(daemon))
        await raw.request("subscribe", {"thread_id": tid, "since": 0})
        await _timed_turn(daemon, tid, 2000)  # frames pile up unread: our side stops answering pings
        async with connect(state_dir=daemon.settings.state_dir) as healthy:
            await trio.sleep(1.5)  # several heartbeats pass (time is the subject here)
            assert await healthy.status()  # a client that reads is never dropped
        with trio.fail_after(WAIT_S), pytest.raises(ConnectionClosed):
            while True:
                await raw.ws.get_message()
    await stop_daemon(daemon)
