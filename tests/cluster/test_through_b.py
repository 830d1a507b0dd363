"""Every operation through node B on threads node A runs (two real daemons over one throwaway
PostgreSQL): the router forwards each to the node that runs the thread, and the answers are
the same as on A. Also the Codex app-server protocol on B, and a parent on A waiting with
``wait_agents`` for a child on B."""

from __future__ import annotations

import json
import uuid
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

import trio
from trio_websocket import wrap_client_stream

from echsd.wire.errors import WireError
from tests.appserver.helpers import AppClient, user_input
from tests.cli.helpers import client_for, echs
from tests.cluster.conftest import Nodes
from tests.cluster.test_any_node import collect_until, turn_ended
from tests.cluster.test_failover import Follower
from tests.helpers import conversation, mock_directive

WAIT_S = 30.0
SLOW = {"text": "".join(f"w{i} " for i in range(200)), "deltas": 200, "delay_ms": 50}


async def test_each_thread_operation_through_node_b(nodes: Nodes, tmp_path: Path) -> None:
    a = nodes.start("node-a")
    b = nodes.start("node-b")
    async with client_for(a.state_dir) as on_a, client_for(b.state_dir) as on_b:
        tid = (await on_a.request("thread.create", {"cwd": str(tmp_path)}))["thread_id"]

        # configure and history
        configured = await on_b.request("thread.configure", {"thread_id": tid, "config": {"reasoning": "high"}})
        assert configured["config"]["reasoning"] == "high" and configured["node"] == "node-a"
        await on_b.request("thread.send", {"thread_id": tid, "text": "first"})
        await collect_until(on_b, tid, turn_ended, [])
        history = await on_b.request("thread.history", {"thread_id": tid})
        assert [item.get("role") for item in conversation(history)][:2] == ["user", "assistant"]
        assert await on_b.request("thread.history", {"thread_id": tid}) == await on_a.request("thread.history", {"thread_id": tid})

        # events, tree, echs show
        events = await on_b.request("thread.events", {"thread_id": tid, "since": 0})
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1)) and events[0]["event"] == "thread.created"
        child = await on_a.request("thread.create", {"parent": tid})
        tree = await on_b.request("thread.tree", {"thread_id": tid})
        assert tree == [{"thread_id": tid, "state": "idle", "children": [{"thread_id": child["thread_id"], "state": "idle", "children": []}]}]
        shown = echs(b.state_dir, "show", tid, "--json", env=b.env)
        assert shown.returncode == 0, shown.stderr
        assert json.loads(shown.stdout)["node"] == "node-a"

        # pause and resume (input sent while paused waits)
        before = (await on_b.request("thread.get", {"thread_id": tid}))["last_seq"]
        paused = await on_b.request("thread.pause", {"thread_id": tid})
        assert paused["state"] == "paused"
        queued = await on_b.request("thread.send", {"thread_id": tid, "text": "later"})
        assert queued["disposition"] == "queued"
        assert (await on_a.request("thread.get", {"thread_id": tid}))["queued"] == 1
        resumed = await on_b.request("thread.resume", {"thread_id": tid})
        assert resumed["resumed"] is True
        after: list[dict[str, Any]] = []
        await collect_until(on_b, tid, turn_ended, after, since=before)
        assert after[-1]["event"] == "turn.completed" and any("later" in json.dumps(e) for e in after)

        # compact
        compacted = await on_b.request("thread.compact", {"thread_id": tid})
        assert compacted["thread_id"] == tid and compacted["items_after"] < compacted["items_before"]

        # steer and interrupt a streaming turn
        streaming = trio.Event()
        seen: list[dict[str, Any]] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(collect_until, on_b, tid, lambda e: e["event"] == "turn.interrupted", seen, 0, streaming)
            await on_b.request("thread.send", {"thread_id": tid, "text": mock_directive(SLOW)})
            with trio.fail_after(WAIT_S):
                await streaming.wait()
            steered = await on_b.request("thread.send", {"thread_id": tid, "text": "steer", "mode": "steer"})
            assert steered["disposition"] == "steered"
            interrupted = await on_b.request("thread.interrupt", {"thread_id": tid})
            assert interrupted["interrupted"] is True
        assert seen[-1]["event"] == "turn.interrupted"

        # delete through B: the thread and its child go on A (it answered not_found before)
        deleted = await on_b.request("thread.delete", {"thread_id": tid})
        assert sorted(deleted["deleted"]) == sorted([tid, child["thread_id"]])
        for client in (on_a, on_b):
            try:
                await client.request("thread.get", {"thread_id": tid})
            except WireError as exc:
                assert exc.code == "not_found"
            else:
                raise AssertionError("a deleted thread is still there")

        # kill through B, with a child: both killed on A
        top = (await on_a.request("thread.create", {}))["thread_id"]
        below = (await on_a.request("thread.create", {"parent": top}))["thread_id"]
        killed = await on_b.request("thread.kill", {"thread_id": top})
        assert sorted(killed["killed"]) == sorted([top, below])
        assert (await on_a.request("thread.get", {"thread_id": below}))["state"] == "killed"
        try:
            await on_b.request("thread.send", {"thread_id": top, "text": "hello?"})
        except WireError as exc:
            assert exc.code == "invalid_state"
        else:
            raise AssertionError("a killed thread took input")


async def test_a_parent_on_node_a_waits_for_lists_steers_and_kills_its_child_on_node_b(nodes: Nodes) -> None:
    a = nodes.start("node-a")
    b = nodes.start("node-b")
    async with client_for(a.state_dir) as on_a, client_for(b.state_dir) as on_b:
        parent = (await on_a.request("thread.create", {}))["thread_id"]
        child = (await on_a.request("thread.create", {"parent": parent, "node": "node-b"}))["thread_id"]
        assert (await on_b.request("thread.get", {"thread_id": child}))["node"] == "node-b"
        await on_b.request("thread.send", {"thread_id": child, "text": mock_directive({"text": "child answer here", "deltas": 20, "delay_ms": 40})})

        listed = {"name": "list_agents", "arguments": {}}
        wait = {"name": "wait_agents", "arguments": {"agent_ids": [child], "timeout_ms": 20_000}}
        steer = {"name": "send_to_agent", "arguments": {"agent_id": child, "message": "and one more"}}
        kill = {"name": "kill_agent", "arguments": {"agent_id": child}}
        follower = Follower()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(follower.run, on_a, parent)
            await on_a.request("thread.send", {"thread_id": parent, "text": mock_directive([{"calls": [listed, wait]}, {"calls": [steer]}, {"calls": [kill]}, {"text": "done"}])})
            await follower.wait_for(lambda e: e["event"] == "turn.completed")
            nursery.cancel_scope.cancel()
        outputs = {e["data"]["name"]: json.loads(e["data"]["output"]) for e in follower.events if e["event"] == "tool.completed"}
        assert [agent["agent_id"] for agent in outputs["list_agents"]["agents"]] == [child]
        waited = outputs["wait_agents"]
        assert waited["timed_out"] is False
        assert waited["agents"] == [
            {
                "agent_id": child,
                "agent_type": None,
                "state": "idle",
                "status": "completed",
                "final_message": "child answer here",
                "branch": None,
                "diff_stat": None,
            }
        ]
        assert outputs["send_to_agent"]["disposition"] in ("started", "queued")
        assert outputs["kill_agent"] == {"agent_id": child, "killed": [child]}
        assert (await on_b.request("thread.get", {"thread_id": child}))["state"] == "killed"
        completed = [e for e in follower.events if e["event"] == "subagent.completed"]
        assert completed and completed[0]["data"]["agent_id"] == child


@asynccontextmanager
async def app_client_at(path: Path) -> AsyncIterator[AppClient]:
    async with trio.open_nursery() as nursery:
        stream = await trio.open_unix_socket(str(path))
        ws = await wrap_client_stream(nursery, stream, "localhost", "/rpc")
        client = AppClient(ws)
        nursery.start_soon(client.read_forever)
        try:
            yield client
        finally:
            with trio.move_on_after(2):
                await ws.aclose()
            nursery.cancel_scope.cancel()
        assert not client.violations, "\n\n".join(client.violations)


async def test_the_codex_tui_calls_on_node_b_drive_a_thread_node_a_runs(nodes: Nodes) -> None:
    a = nodes.start("node-a")
    socket = nodes.state_dir("node-b") / "app" / "app.sock"
    b = nodes.start("node-b", extra=("--app-server", f"unix://{socket}"))
    async with client_for(a.state_dir) as on_a:
        tid = (await on_a.request("thread.create", {}))["thread_id"]
        await on_a.request("thread.send", {"thread_id": tid, "text": "made on a"})
        await collect_until(on_a, tid, turn_ended, [])
        async with app_client_at(socket) as tui:
            await tui.initialize()
            read = await tui.call("thread/read", {"threadId": tid, "includeTurns": True})
            assert read["thread"]["name"] == tid and len(read["thread"]["turns"]) == 1
            resumed = await tui.call("thread/resume", {"threadId": tid})
            uid = resumed["thread"]["id"]
            assert uuid.UUID(uid) and [t["status"] for t in resumed["thread"]["turns"]] == ["completed"]

            turn = (await tui.call("turn/start", user_input(uid, "hello from b", str(uuid.uuid4()))))["turn"]["id"]
            completed = await tui.notification("turn/completed", timeout=WAIT_S)
            assert completed["turn"]["id"] == turn and completed["turn"]["status"] == "completed"
            delta_text = "".join(n["delta"] for n in tui.of_method("item/agentMessage/delta"))
            assert "mock reply to: hello from b" in delta_text

            mark = len(tui.messages)
            slow = (await tui.call("turn/start", user_input(uid, mock_directive(SLOW), str(uuid.uuid4()))))["turn"]["id"]
            await tui.notification("item/agentMessage/delta", after=mark, timeout=WAIT_S)
            assert await tui.call("turn/interrupt", {"threadId": uid, "turnId": slow}) == {}
            ended = await tui.notification("turn/completed", after=mark, timeout=WAIT_S)
            assert ended["turn"]["id"] == slow and ended["turn"]["status"] == "interrupted"
        events = await on_a.request("thread.events", {"thread_id": tid, "since": 0})
        assert [e["data"]["reason"] for e in events if e["event"] == "turn.interrupted"] == ["interrupt"]
        assert b.process is not None and b.process.poll() is None
