"""Sub-agents across a SIGKILL of a real ``echsd serve``: the parent/child links survive, and a
parent that was waiting in ``wait_agents`` has its turn closed as interrupted (reason
``restart``, the wait's call answered with why), while each child keeps its own state: its
turn closed the same way, reported to the parent as ``subagent.completed``, and read as
``interrupted`` by the parent's next ``wait_agents``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import trio

from echsd.wire.client import connect
from tests.cli.helpers import of_type, wait_event
from tests.helpers import mock_directive
from tests.threads.test_subagents import spawn, wait
from tests.wire.helpers import ServeProcess

WAIT_S = 30.0


def endless_child(name: str) -> str:
    """A sub-agent's task whose reply streams far longer than the test lasts."""
    return f"{name}\n" + mock_directive({"text": " ".join(f"w{i}" for i in range(2000)), "deltas": 2000, "delay_ms": 20})


async def events_until(client: Any, thread_id: str, since: int, done: Callable[[list[dict[str, Any]]], bool]) -> list[dict[str, Any]]:
    """The thread's events after ``since`` (replayed, then live) until ``done`` holds for them."""
    got: list[dict[str, Any]] = []
    with trio.fail_after(WAIT_S):
        async with client.events(thread_id, since=since) as stream:
            async for event in stream:
                got.append(event)
                if done(got):
                    return got
    raise AssertionError(f"the event stream of {thread_id} ended: {got}")


def count(kind: str, n: int) -> Callable[[list[dict[str, Any]]], bool]:
    return lambda events: sum(e["event"] == kind for e in events) >= n


async def test_links_survive_sigkill_and_a_waiting_parent_is_closed_as_interrupted(tmp_path: Path) -> None:
    state = tmp_path / "state"
    workdir = tmp_path / "work"
    workdir.mkdir()
    serve = ServeProcess(state)
    try:
        async with connect(state_dir=state) as client:
            parent = (await client.create_thread(cwd=str(workdir)))["thread_id"]
            steps = [{"calls": [spawn(endless_child("a")), spawn(endless_child("b"))]}, {"calls": [wait()]}, {"text": "x"}]
            await client.send(parent, mock_directive(steps))
            waiting = await wait_event(client, parent, of_type("tool.started", name="wait_agents"), timeout=WAIT_S)
            children = (await client.get_thread(parent))["children"]
            assert len(children) == 2
            child_seqs = {}  # a delta each child's turn streamed: durable (published once committed)
            for child in children:  # (the thread object's last_seq may count events a SIGKILL loses)
                child_seqs[child] = (await wait_event(client, child, of_type("turn.delta"), timeout=WAIT_S))["seq"]
        serve.sigkill()  # the parent is inside wait_agents, the children mid-reply
    finally:
        serve.sigkill()

    again = ServeProcess(state)
    try:
        async with connect(state_dir=state) as client:
            shown = await client.get_thread(parent)
            assert shown["children"] == children and shown["parent"] is None
            for child in children:
                child_shown = await client.get_thread(child)
                assert child_shown["parent"] == parent and child_shown["agent_type"] == "default"

            # The parent's turn was closed as interrupted, its wait answered with why; each
            # child's turn ended the same way, and the parent heard of it.
            after = await events_until(client, parent, waiting["seq"], count("subagent.completed", 2))
            [closed] = [e for e in after if e["event"] == "turn.interrupted"]
            assert closed["data"]["reason"] == "restart"
            completed = {e["data"]["agent_id"]: e["data"] for e in after if e["event"] == "subagent.completed"}
            assert set(completed) == set(children)
            assert all((d["status"], d["final_message"]) == ("interrupted", "") for d in completed.values())
            history = await client.history(parent)
            [wait_call] = [i for i in history if i.get("type") == "function_call" and i["name"] == "wait_agents"]
            [wait_output] = [i for i in history if i.get("type") == "function_call_output" and i["call_id"] == wait_call["call_id"]]
            assert "the daemon restarted before this call finished" in str(wait_output["output"])
            for child in children:
                child_events = await events_until(client, child, child_seqs[child], count("turn.interrupted", 1))
                assert [e["data"]["reason"] for e in child_events if e["event"] == "turn.interrupted"] == ["restart"]
                assert (await client.get_thread(child))["state"] == "idle"
            assert await client.thread_tree(parent) == [  # once every turn is closed (the workers close them after 'ready')
                {"thread_id": parent, "state": "idle", "children": [{"thread_id": c, "state": "idle", "children": []} for c in children]}
            ]

            # Its next wait reads the children's own state at once: their turns were interrupted.
            last = (await client.get_thread(parent))["last_seq"]
            await client.send(parent, mock_directive([{"calls": [wait(timeout_ms=60_000)]}, {"text": "checked"}]))
            turn = await events_until(client, parent, last, count("turn.completed", 1))
            [waited] = [json.loads(e["data"]["output"]) for e in turn if e["event"] == "tool.completed"]
            assert waited["timed_out"] is False
            assert {a["agent_id"]: a["status"] for a in waited["agents"]} == dict.fromkeys(children, "interrupted")
    finally:
        again.stop()
