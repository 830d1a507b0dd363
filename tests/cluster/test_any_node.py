"""Any node serves any thread: a thread run by node A is listed, read, sent to, steered,
interrupted and watched through node B, over real daemons sharing one PostgreSQL."""

from __future__ import annotations

import json
from typing import Any

import trio

from tests.cli.helpers import client_for, echs
from tests.cluster.conftest import Nodes
from tests.helpers import mock_directive

WAIT_S = 20.0
TURN_ENDS = ("turn.completed", "turn.interrupted", "turn.error")


def turn_ended(event: dict[str, Any]) -> bool:
    return event["event"] in TURN_ENDS


async def collect_until(
    client: Any, thread_id: str, done: Any, into: list[dict[str, Any]], since: int = 0, first_delta: trio.Event | None = None
) -> None:
    with trio.fail_after(WAIT_S):
        async with client.events(thread_id, since=since) as stream:
            async for event in stream:
                into.append(event)
                if first_delta is not None and event["event"] == "turn.delta":
                    first_delta.set()
                if done(event):
                    return


async def test_a_thread_on_one_node_is_driven_through_another(nodes: Nodes) -> None:
    a = nodes.start("node-a")
    b = nodes.start("node-b")
    async with client_for(a.state_dir) as on_a, client_for(b.state_dir) as on_b:
        thread = await on_a.request("thread.create", {})
        thread_id = thread["thread_id"]
        assert thread["node"] == "node-a"

        # B lists it and reads it, naming A as its owner.
        listed = await on_b.request("thread.list", {})
        assert [t["node"] for t in listed if t["thread_id"] == thread_id] == ["node-a"]
        seen = await on_b.request("thread.get", {"thread_id": thread_id})
        assert seen["node"] == "node-a" and seen["state"] == "idle"

        # A slow streaming turn sent through B; a client on B watches it.
        events: list[dict[str, Any]] = []
        streaming = trio.Event()
        slow = {"text": "".join(f"w{i} " for i in range(60)), "deltas": 60, "delay_ms": 40}
        async with trio.open_nursery() as nursery:
            nursery.start_soon(collect_until, on_b, thread_id, lambda e: e["event"] == "turn.interrupted", events, 0, streaming)
            ack = await on_b.request("thread.send", {"thread_id": thread_id, "text": mock_directive(slow)})
            assert ack["disposition"] == "started"
            with trio.fail_after(WAIT_S):
                await streaming.wait()
            # Steered through B while it streams; then interrupted through B.
            steer = await on_b.request("thread.send", {"thread_id": thread_id, "text": "steer me", "mode": "steer"})
            assert steer["disposition"] == "steered"
            await on_b.request("thread.interrupt", {"thread_id": thread_id})
        assert events[-1]["event"] == "turn.interrupted"

        # What B's client got is contiguous, and the same as A's log.
        seqs = [e["seq"] for e in events]
        assert seqs == list(range(1, seqs[-1] + 1)), seqs
        on_a_log = await on_a.request("thread.events", {"thread_id": thread_id, "since": 0})
        assert [e["seq"] for e in on_a_log][: len(seqs)] == seqs
        assert [e["event"] for e in on_a_log][: len(seqs)] == [e["event"] for e in events]

        # The CLI through B: echs show names the owner; status lists both nodes.
        shown = echs(b.state_dir, "show", thread_id, "--json", env=b.env)
        assert shown.returncode == 0, shown.stderr
        assert json.loads(shown.stdout)["node"] == "node-a"
        status = await on_b.request("status", {})
        assert status["node"] == "node-b"
        assert {n["node_id"]: n["alive"] for n in status["nodes"]} == {"node-a": True, "node-b": True}
        shown_status = echs(b.state_dir, "status", env=b.env)
        assert shown_status.returncode == 0, shown_status.stderr
        assert "node-b (of 2 sharing the store)" in shown_status.stdout
        assert "node-a: 1 thread, lease renewed" in shown_status.stdout
        assert "; 1 on all nodes" in shown_status.stdout
        shown_human = echs(b.state_dir, "show", thread_id, env=b.env)
        assert "node          node-a" in shown_human.stdout

        # A thread placed on B from A runs on B.
        placed = await on_a.request("thread.create", {"node": "node-b"})
        assert placed["node"] == "node-b"
        ack = await on_a.request("thread.send", {"thread_id": placed["thread_id"], "text": "hello b"})
        reply: list[dict[str, Any]] = []
        await collect_until(on_a, placed["thread_id"], turn_ended, reply)
        assert "mock reply to: hello b" in "".join(e["data"].get("delta", "") for e in reply)
        assert ack["disposition"] == "started"

        # Killed through B.
        killed = await on_b.request("thread.kill", {"thread_id": thread_id})
        assert killed["killed"] == [thread_id]
        assert (await on_a.request("thread.get", {"thread_id": thread_id}))["state"] == "killed"


async def test_an_approval_on_node_a_is_listed_and_answered_through_node_b(nodes: Nodes, tmp_path: Any) -> None:
    a = nodes.start("node-a")
    b = nodes.start("node-b")
    async with client_for(a.state_dir) as on_a, client_for(b.state_dir) as on_b:
        thread_id = (await on_a.request("thread.create", {"cwd": str(tmp_path)}))["thread_id"]
        await on_b.request("thread.configure", {"thread_id": thread_id, "config": {"approval": "always"}})
        call = {"name": "exec_command", "arguments": {"cmd": "touch approved-via-b"}}
        events: list[dict[str, Any]] = []
        asked = trio.Event()

        async def watch() -> None:
            def done(event: dict[str, Any]) -> bool:
                if event["event"] == "approval.requested":
                    asked.set()
                return turn_ended(event)

            await collect_until(on_b, thread_id, done, events)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(watch)
            await on_b.request("thread.send", {"thread_id": thread_id, "text": mock_directive([{"calls": [call]}, {"text": "ok"}])})
            with trio.fail_after(WAIT_S):
                await asked.wait()
            request_id = next(e["data"]["request_id"] for e in events if e["event"] == "approval.requested")
            assert [p["request_id"] for p in await on_b.request("approval.list", {})] == [request_id]
            assert [p["request_id"] for p in await on_b.request("approval.list", {"thread_id": thread_id})] == [request_id]
            answer = await on_b.request("approval.respond", {"request_id": request_id, "decision": "approve"})
            assert answer == {"request_id": request_id, "decision": "approve", "thread_id": thread_id}
        assert events[-1]["event"] == "turn.completed"
        assert (tmp_path / "approved-via-b").exists()
        again = await on_b.request("approval.list", {})
        assert again == []
