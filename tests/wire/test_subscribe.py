"""Subscriptions through a real socket: replay then live, no gap, no duplicate, reconnects."""

from __future__ import annotations

from typing import Any

import trio

from echsd.wire.client import Client, connect
from tests.helpers import mock_directive
from tests.wire.helpers import WAIT_S, raw_connection, start_daemon, stop_daemon, token_of

STREAM = mock_directive({"repeat": {"chunk": "x", "count": 300}, "delay_ms": 2})


async def _collect_until(raw: Any, event_type: str) -> None:
    """Read frames into ``raw.events`` until an ``event_type`` event has arrived."""
    with trio.fail_after(WAIT_S):
        while not any(e["event"] == event_type for e in raw.events):
            message = await raw.receive()
            raw.events.extend(message["events"] if "events" in message else [message])


async def _stored_seqs(client: Client, thread_id: str) -> list[int]:
    seqs: list[int] = []
    while True:
        page = await client.thread_events(thread_id, since=seqs[-1] if seqs else 0)
        if not page:
            return seqs
        seqs += [event["seq"] for event in page]


async def test_subscribe_mid_stream_has_no_gap_or_duplicate_at_the_seam(wired: Any, client: Client, tmp_path: Any) -> None:
    tid = (await client.create_thread(cwd=str(tmp_path)))["thread_id"]
    await client.send(tid, f"stream\n{STREAM}")
    async with raw_connection(wired) as raw:
        await raw.hello(token_of(wired))
        with trio.fail_after(WAIT_S):
            while not [e for e in await client.thread_events(tid, since=20, limit=1)]:
                await trio.sleep(0.01)  # poll the store until the turn is under way
        answer = await raw.request("subscribe", {"thread_id": tid, "since": 3})
        assert answer["ok"], answer
        result = answer["result"]
        before = [e["seq"] for e in raw.events]
        assert before == list(range(4, result["last_seq"] + 1)) and result["replayed"] == len(before)
        assert not any(e["event"] == "turn.completed" for e in raw.events)  # truly mid-stream
        await _collect_until(raw, "turn.completed")
    seqs = [e["seq"] for e in raw.events]
    assert seqs == list(range(4, seqs[-1] + 1))
    stored = await _stored_seqs(client, tid)
    assert seqs == stored[3 : len(seqs) + 3]


async def test_live_only_subscription_and_unsubscribe(wired: Any, client: Client, tmp_path: Any) -> None:
    tid = (await client.create_thread(cwd=str(tmp_path)))["thread_id"]
    async with raw_connection(wired) as raw:
        await raw.hello(token_of(wired))
        answer = await raw.request("subscribe", {"thread_id": tid})
        assert answer["result"] == {"thread_id": tid, "since": None, "replayed": 0, "last_seq": 1}
        await client.send(tid, "hi")
        await _collect_until(raw, "turn.completed")
        assert raw.events[0]["seq"] == 2
        assert (await raw.request("unsubscribe", {"thread_id": tid}))["result"]["subscribed"] is False
        raw.events.clear()
        await client.send(tid, "again")
        assert (await raw.request("status"))["ok"]  # answered after the turn's first events exist
        await _wait_for_turn(client, tid, 2)
        assert (await raw.request("status"))["ok"]
        assert raw.events == []


async def _wait_for_turn(client: Client, thread_id: str, count: int) -> None:
    with trio.fail_after(WAIT_S):
        async with client.events(thread_id) as stream:
            done = 0
            async for event in stream:
                done += event["event"] == "turn.completed"
                if done == count:
                    return


async def test_resubscribe_restarts_from_the_new_since(wired: Any, client: Client, tmp_path: Any) -> None:
    tid = (await client.create_thread(cwd=str(tmp_path)))["thread_id"]
    await client.send(tid, "one")
    await _wait_for_turn(client, tid, 1)
    async with raw_connection(wired) as raw:
        await raw.hello(token_of(wired))
        first = (await raw.request("subscribe", {"thread_id": tid, "since": 0}))["result"]
        assert [e["seq"] for e in raw.events] == list(range(1, first["last_seq"] + 1))
        raw.events.clear()
        second = (await raw.request("subscribe", {"thread_id": tid, "since": 5}))["result"]
        assert [e["seq"] for e in raw.events] == list(range(6, second["last_seq"] + 1))
        assert second["replayed"] == second["last_seq"] - 5


async def test_star_subscription_sees_every_thread_once(wired: Any, client: Client, tmp_path: Any) -> None:
    a = (await client.create_thread(cwd=str(tmp_path)))["thread_id"]
    await client.send(a, "before")
    await _wait_for_turn(client, a, 1)
    async with raw_connection(wired) as raw:
        await raw.hello(token_of(wired))
        await raw.request("subscribe", {"thread_id": "*", "since": 0})
        await raw.request("subscribe", {"thread_id": a})  # overlapping: still one copy each
        b = (await client.create_thread(cwd=str(tmp_path)))["thread_id"]
        await client.send(a, "after")
        await client.send(b, "new thread")
        await _wait_for_turn(client, b, 1)
        await _wait_for_turn(client, a, 2)
        await raw.request("status")
        with trio.move_on_after(0.2):  # drain whatever is still in flight
            while True:
                message = await raw.receive()
                raw.events.extend(message["events"] if "events" in message else [message])
    for tid in (a, b):
        seqs = [e["seq"] for e in raw.events if e["thread_id"] == tid]
        assert seqs == await _stored_seqs(client, tid)


async def test_two_clients_drive_and_watch_one_thread(wired: Any, tmp_path: Any) -> None:
    state = wired.settings.state_dir
    async with connect(state_dir=state) as one, connect(state_dir=state) as two:
        tid = (await one.create_thread(cwd=str(tmp_path)))["thread_id"]
        seen: dict[str, list[dict[str, Any]]] = {"one": [], "two": []}

        async def watch(name: str, client: Client, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
            async with client.events(tid) as stream:
                task_status.started()
                completed = 0
                async for event in stream:
                    seen[name].append(event)
                    completed += event["event"] == "turn.completed"
                    if completed == 2:
                        return

        with trio.fail_after(WAIT_S):
            async with trio.open_nursery() as nursery:
                await nursery.start(watch, "one", one)
                await nursery.start(watch, "two", two)
                await one.send(tid, "from one", mode="queue")
                await two.send(tid, "from two", mode="queue")
    assert seen["one"] == seen["two"]
    assert [e["seq"] for e in seen["one"]] == list(range(1, len(seen["one"]) + 1))
    texts = [e["data"]["final_text"] for e in seen["one"] if e["event"] == "turn.completed"]
    assert texts == ["mock reply to: from one", "mock reply to: from two"]


async def test_event_stream_survives_a_daemon_restart(tmp_path: Any, mock_upstream: Any, nursery: Any) -> None:
    state = tmp_path / "state"
    daemon = await start_daemon(nursery, state, mock_upstream.base_url, tcp=False)
    seen: list[dict[str, Any]] = []
    halfway = trio.Event()
    async with connect(state_dir=state) as client:
        tid = (await client.create_thread(cwd=str(tmp_path)))["thread_id"]
        slow = mock_directive({"repeat": {"chunk": "y", "count": 60}, "delay_ms": 20})
        await client.send(tid, f"slow\n{slow}")

        async def consume() -> None:
            async with client.events(tid) as stream:
                async for event in stream:
                    seen.append(event)
                    if len(seen) == 20:
                        halfway.set()
                    if event["event"] == "turn.completed":
                        return

        with trio.fail_after(3 * WAIT_S):
            async with trio.open_nursery() as inner:
                inner.start_soon(consume)
                await halfway.wait()
                await stop_daemon(daemon)  # the turn ends interrupted (shutdown)
                daemon = await start_daemon(nursery, state, mock_upstream.base_url, tcp=False)
                async with connect(state_dir=state) as other:
                    await other.send(tid, "after the restart")
        stored = await _stored_seqs(client, tid)
    assert [e["seq"] for e in seen] == stored[: len(seen)] == list(range(1, len(seen) + 1))
    assert any(e["event"] == "turn.interrupted" and e["data"]["reason"] == "shutdown" for e in seen)
    await stop_daemon(daemon)


async def test_client_event_stream_over_every_thread(wired: Any, client: Client, tmp_path: Any) -> None:
    a = (await client.create_thread(cwd=str(tmp_path)))["thread_id"]
    await client.send(a, "first")
    seen: dict[str, list[int]] = {}
    with trio.fail_after(WAIT_S):
        async with client.events("*") as stream:
            b = (await client.create_thread(cwd=str(tmp_path)))["thread_id"]
            await client.send(b, "second")
            done = set()
            async for event in stream:
                seen.setdefault(event["thread_id"], []).append(event["seq"])
                if event["event"] == "turn.completed":
                    done.add(event["thread_id"])
                    if done == {a, b}:
                        break
    for tid in (a, b):
        assert seen[tid] == list(range(1, len(seen[tid]) + 1))
