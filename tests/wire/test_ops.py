"""Every op end to end: client library -> real socket -> real daemon -> mock upstream."""

from __future__ import annotations

from typing import Any

import msgpack
import pytest
import trio
from trio_websocket import ConnectionClosed

from echsd.wire.client import Client, WireError, connect
from echsd.ops.threads import ListThreads
from echsd.router.handlers import NODE
from tests.helpers import conversation, mock_directive
from tests.wire.helpers import WAIT_S, raw_connection, start_daemon, stop_daemon, tcp_port, token_of


async def _until(client: Client, thread_id: str, event_type: str, since: int = 0) -> list[dict[str, Any]]:
    """Events of the thread from ``since`` up to the first ``event_type``."""
    seen = []
    with trio.fail_after(WAIT_S):
        async with client.events(thread_id, since=since) as stream:
            async for event in stream:
                seen.append(event)
                if event["event"] == event_type:
                    return seen
    raise AssertionError("stream ended")


async def test_thread_lifecycle_ops(client: Client, tmp_path: Any) -> None:
    status = await client.status()
    assert status["threads"]["total"] == 0 and status["version"] and status["provider"] == "openai"
    thread = await client.create_thread(cwd=str(tmp_path), reasoning="low", instructions="be brief")
    tid = thread["thread_id"]
    assert thread["config"]["reasoning"] == "low" and thread["state"] == "idle"
    assert [t["thread_id"] for t in await client.list_threads()] == [tid]
    assert (await client.get_thread(tid))["config"]["instructions"] == "be brief"
    configured = await client.configure(tid, {"reasoning": "high", "model": "gpt-x"})
    assert configured["config"]["reasoning"] == "high" and configured["config"]["model"] == "gpt-x"

    ack = await client.send(tid, "hello wire", client_msg_id="m-1")
    assert ack["disposition"] == "started" and ack["thread_id"] == tid
    again = await client.send(tid, "hello wire", client_msg_id="m-1")
    assert again["input_id"] == ack["input_id"]
    events = await _until(client, tid, "turn.completed")
    assert "".join(e["data"]["delta"] for e in events if e["event"] == "turn.delta") == "mock reply to: hello wire"
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))

    history = conversation(await client.history(tid))
    assert [item["role"] for item in history] == ["user", "assistant"]
    stored = await client.thread_events(tid, since=2, limit=3)
    assert [e["seq"] for e in stored] == [3, 4, 5]
    assert stored == [e for e in events if 3 <= e["seq"] <= 5]

    compacted = await client.compact(tid)
    assert compacted["thread_id"] == tid and "items_after" in compacted

    assert (await client.interrupt(tid))["interrupted"] is False
    paused = await client.pause(tid)
    assert paused["state"] == "paused"
    queued = await client.send(tid, "while paused")
    assert queued["disposition"] == "queued"
    assert (await client.get_thread(tid))["queued"] == 1
    resumed = await client.resume(tid)
    assert resumed["state"] in ("idle", "running")
    await _until(client, tid, "turn.completed", since=len(events) + 1)

    killed = await client.kill(tid)
    assert killed["killed"] == [tid]
    with pytest.raises(WireError) as info:
        await client.send(tid, "too late")
    assert info.value.code == "invalid_state"


async def test_interrupt_a_running_turn(client: Client, tmp_path: Any) -> None:
    tid = (await client.create_thread(cwd=str(tmp_path)))["thread_id"]
    slow = mock_directive({"text": "one two three four five six seven eight nine ten", "delay_ms": 300})
    async with client.events(tid) as stream:
        await client.send(tid, f"go\n{slow}")
        with trio.fail_after(WAIT_S):
            async for event in stream:
                if event["event"] == "turn.delta":
                    result = await client.interrupt(tid, clear_queue=True)
                    assert result["interrupted"] is True
                if event["event"] == "turn.interrupted":
                    assert event["data"]["reason"] == "interrupt"
                    break


async def test_errors_map_to_codes(client: Client) -> None:
    async def code_of(op: str, params: dict[str, Any]) -> str:
        with pytest.raises(WireError) as info:
            await client.request(op, params)
        return info.value.code

    assert await code_of("thread.get", {"thread_id": "thr_0000000000000000"}) == "not_found"
    assert await code_of("thread.get", {"thread_id": "nope"}) == "not_found"
    assert await code_of("subscribe", {"thread_id": "thr_0000000000000000", "since": 0}) == "not_found"
    assert await code_of("thread.get", {}) == "bad_request"
    assert await code_of("thread.send", {"thread_id": "thr_0000000000000000", "text": "x", "mode": "shout"}) == "bad_request"
    assert await code_of("thread.create", {"cwd": "relative/path"}) == "bad_request"
    assert await code_of("thread.create", {"colour": "red"}) == "bad_request"
    assert await code_of("no.such.op", {}) == "unknown_op"
    assert await code_of("blackboard.get", {"key": "k"}) == "not_found"
    assert await code_of("hello", {"protocol": 1, "token": "x"}) == "bad_request"  # already authenticated
    assert (await client.status())["threads"]["total"] == 0  # the connection is still fine


async def test_pipelined_requests_are_answered_in_order(wired: Any) -> None:
    async with raw_connection(wired) as raw:
        await raw.hello(token_of(wired))
        for request_id in range(10, 60):
            op = "status" if request_id % 2 else "thread.list"
            await raw.send({"id": request_id, "op": op})
        answers = [await raw.response() for _ in range(50)]
    assert [a["id"] for a in answers] == list(range(10, 60))
    assert all(a["ok"] for a in answers)


async def test_ops_over_loopback_tcp(wired: Any) -> None:
    async with connect(url=f"ws://127.0.0.1:{tcp_port(wired)}/v1", token=token_of(wired)) as client:
        assert (await client.status())["version"]
        assert client.server["protocol"] == 1


async def test_internal_errors_are_answered_not_dropped(client: Client, wired: Any, monkeypatch: Any) -> None:
    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setitem(NODE, ListThreads, broken)
    with pytest.raises(WireError) as info:
        await client.list_threads()
    assert info.value.code == "internal" and "RuntimeError" in info.value.message
    assert await client.status()


async def test_frame_level_errors_keep_the_connection_open(wired: Any) -> None:
    async with raw_connection(wired) as raw:
        await raw.hello(token_of(wired))
        for frame in ("a text frame", b"\xc1", msgpack.packb([1, 2]), msgpack.packb({"id": "7", "op": "status"})):
            await raw.send(frame)
            answer = await raw.response()
            assert answer["id"] is None and answer["error"]["code"] == "bad_request", answer
        assert (await raw.request("status"))["ok"]


async def test_oversized_messages_close_the_connection_with_1009(tmp_path: Any, mock_upstream: Any, nursery: Any) -> None:
    daemon = await start_daemon(nursery, tmp_path / "state", mock_upstream.base_url, tcp=False, tuning={"max_message_bytes": 65536})
    tid = (await daemon.ops.create_thread(cwd=str(tmp_path)))["thread_id"]
    async with raw_connection(daemon) as raw:
        await raw.hello(token_of(daemon))
        await raw.send({"id": 2, "op": "thread.send", "params": {"thread_id": tid, "text": "x" * 70_000}})
        with trio.fail_after(WAIT_S), pytest.raises(ConnectionClosed) as info:
            await raw.ws.get_message()
        assert info.value.reason.code == 1009
    assert (await daemon.ops.get_thread(tid))["last_seq"] == 1  # nothing happened to the thread
    await stop_daemon(daemon)
