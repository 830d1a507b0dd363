"""A node that dies loses nothing acknowledged: its threads resume on another node, with
the recovery of a restart; a node that was paused past its lease can never append."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import trio

from tests.cli.helpers import client_for
from tests.cluster.conftest import LEASE_S, Nodes
from tests.helpers import mock_directive

WAIT_S = 30.0


class Follower:
    """Every event of one thread, as a client on some node gets them (replay, then live)."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self._changed = trio.Event()

    async def run(self, client: Any, thread_id: str) -> None:
        async with client.events(thread_id, since=0) as stream:
            async for event in stream:
                self.events.append(event)
                self._changed.set()
                self._changed = trio.Event()

    async def wait_for(self, predicate: Any, timeout: float = WAIT_S) -> dict[str, Any]:
        with trio.fail_after(timeout):
            while True:
                for event in self.events:
                    if predicate(event):
                        return event
                await self._changed.wait()


def seqs_are_contiguous(events: list[dict[str, Any]]) -> bool:
    seqs = [e["seq"] for e in events]
    return seqs == list(range(1, len(seqs) + 1))


async def test_a_killed_node_s_threads_resume_on_another(nodes: Nodes) -> None:
    a = nodes.start("node-a")
    b = nodes.start("node-b")
    async with client_for(a.state_dir) as on_a, client_for(b.state_dir) as on_b:
        await on_a.request("blackboard.set", {"key": "plan/step", "value": {"n": 1}})
        streaming = (await on_a.request("thread.create", {}))["thread_id"]
        tooling = (await on_a.request("thread.create", {}))["thread_id"]
        watch_streaming, watch_tooling = Follower(), Follower()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(watch_streaming.run, on_b, streaming)
            nursery.start_soon(watch_tooling.run, on_b, tooling)

            # A long streaming turn, with an input queued behind it; a turn whose tool runs.
            slow = {"text": "".join(f"w{i} " for i in range(400)), "deltas": 400, "delay_ms": 50}
            await on_a.request("thread.send", {"thread_id": streaming, "text": mock_directive(slow)})
            queued = await on_a.request("thread.send", {"thread_id": streaming, "text": "after the crash", "mode": "queue"})
            assert queued["disposition"] == "queued"
            sleeper = {"calls": [{"name": "exec_command", "arguments": {"cmd": "sleep 120", "yield_time_ms": 60000}}]}
            await on_a.request("thread.send", {"thread_id": tooling, "text": mock_directive([sleeper, {"text": "slept"}])})
            await watch_streaming.wait_for(lambda e: e["event"] == "turn.delta")
            await watch_tooling.wait_for(lambda e: e["event"] == "tool.started")

            a.kill()  # SIGKILL, mid-stream and mid-tool
            killed_at = time.monotonic()

            # B adopts both: the crashed turns end as interrupted, the queued input runs on B.
            interrupted = await watch_streaming.wait_for(lambda e: e["event"] == "turn.interrupted")
            adopted_after = time.monotonic() - killed_at
            await watch_tooling.wait_for(lambda e: e["event"] == "turn.interrupted")
            delivered = await watch_streaming.wait_for(
                lambda e: e["event"] == "input.delivered" and e["data"].get("input_id") == queued["input_id"]
            )
            await watch_streaming.wait_for(lambda e: e["event"] == "turn.completed" and e["seq"] > delivered["seq"])
            nursery.cancel_scope.cancel()

        assert adopted_after < LEASE_S + 5, f"adopted {adopted_after:.1f} s after the kill"
        assert interrupted["seq"] < delivered["seq"]
        for follower in (watch_streaming, watch_tooling):
            assert seqs_are_contiguous(follower.events), [e["seq"] for e in follower.events]
        for thread_id in (streaming, tooling):
            thread = await on_b.request("thread.get", {"thread_id": thread_id})
            assert thread["node"] == "node-b" and thread["state"] == "idle"
        reply = "".join(e["data"].get("delta", "") for e in watch_streaming.events if e["seq"] > delivered["seq"])
        assert "mock reply to: after the crash" in reply
        entry = await on_b.request("blackboard.get", {"key": "plan/step"})
        assert entry["value"] == {"n": 1}
        status = await on_b.request("status", {})
        assert [n["node_id"] for n in status["nodes"]] == ["node-b"]


async def test_a_paused_owner_cannot_append_after_its_lease_was_taken(nodes: Nodes) -> None:
    a = nodes.start("node-a")
    b = nodes.start("node-b")
    async with client_for(a.state_dir) as on_a, client_for(b.state_dir) as on_b:
        thread_id = (await on_a.request("thread.create", {}))["thread_id"]
        watch = Follower()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(watch.run, on_b, thread_id)
            slow = {"text": "".join(f"w{i} " for i in range(400)), "deltas": 400, "delay_ms": 50}
            await on_a.request("thread.send", {"thread_id": thread_id, "text": mock_directive(slow)})
            await watch.wait_for(lambda e: e["event"] == "turn.delta")

            assert a.process is not None
            os.kill(a.process.pid, signal.SIGSTOP)  # A stops renewing, mid-stream
            interrupted = await watch.wait_for(lambda e: e["event"] == "turn.interrupted")
            thread = await on_b.request("thread.get", {"thread_id": thread_id})
            assert thread["node"] == "node-b"
            os.kill(a.process.pid, signal.SIGCONT)  # A resumes: its stream goes on, its writes must not

            # A notices (its next write is refused, its renewal fails) and drops the thread.
            with trio.fail_after(WAIT_S):
                while True:
                    status = await on_a.request("status", {})
                    if status["threads"]["total"] == 0:
                        break
                    await trio.sleep(0.1)
            # A rejoined under a new incarnation, and both nodes are alive again.
            with trio.fail_after(WAIT_S):
                while len([n for n in (await on_b.request("status", {}))["nodes"] if n["alive"]]) < 2:
                    await trio.sleep(0.1)
            nursery.cancel_scope.cancel()

        log = await on_b.request("thread.events", {"thread_id": thread_id, "since": 0})
        assert seqs_are_contiguous(log)
        # Nothing after the interruption came from A's stream: no delta follows it.
        after = [e for e in log if e["seq"] > interrupted["seq"]]
        assert not [e for e in after if e["event"] == "turn.delta"], after
        assert (await on_a.request("thread.get", {"thread_id": thread_id}))["node"] == "node-b"


async def test_three_nodes_one_adopter_and_every_node_sees_the_result(nodes: Nodes) -> None:
    a, b, c = nodes.start("node-a"), nodes.start("node-b"), nodes.start("node-c")
    async with client_for(a.state_dir) as on_a, client_for(b.state_dir) as on_b, client_for(c.state_dir) as on_c:
        threads = [(await on_a.request("thread.create", {}))["thread_id"] for _ in range(3)]
        queued = await on_a.request("thread.send", {"thread_id": threads[0], "text": mock_directive({"text": "one", "delay_ms": 0})})
        watch = Follower()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(watch.run, on_c, threads[0])
            await watch.wait_for(lambda e: e["event"] == "turn.completed")
            a.kill()
            with trio.fail_after(LEASE_S + 10):
                while True:
                    owners = {t["node"] for t in await on_c.request("thread.list", {}) if t["thread_id"] in threads}
                    if "node-a" not in owners:
                        break
                    await trio.sleep(0.1)
            nursery.cancel_scope.cancel()
        assert len(owners) == 1 and owners <= {"node-b", "node-c"}, owners  # one adopter took them all
        adopter = on_b if owners == {"node-b"} else on_c
        other = on_c if adopter is on_b else on_b
        # Driven through the node that did not adopt, run by the one that did.
        ack = await other.request("thread.send", {"thread_id": threads[1], "text": "after"})
        assert ack["disposition"] == "started" and queued["disposition"] == "started"
        reply = Follower()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(reply.run, adopter, threads[1])
            done = await reply.wait_for(lambda e: e["event"] == "turn.completed")
            nursery.cancel_scope.cancel()
        assert "mock reply to: after" in "".join(e["data"].get("delta", "") for e in reply.events if e["seq"] < done["seq"])
        alive = [n["node_id"] for n in (await other.request("status", {}))["nodes"]]
        assert sorted(alive) == ["node-b", "node-c"]
