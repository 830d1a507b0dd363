"""A spawn bomb (fan-out 8, three levels: 584 sub-agents, default limits) neither starves an
unrelated thread's sub-agent nor deadlocks itself: parents waiting in ``wait_agents`` lend
their slots back, and slots go to the tree holding fewest. Before, the 72 waiting parents
held all 50 slots: their children and everyone else's waited for ever.

"Starts" is timed from the sub-agent's ``turn.started`` (its input taken, its turn due) to
its reply, by the daemon's own time stamps: the wait for a slot. Before that, the daemon
takes the child's input as fast as it commits anything, which in the bomb's write storm
on a shared 2-core machine is about a second (bounded below, not part of the claim)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trio

from tests.cli.helpers import Serve, client_for
from tests.helpers import mock_directive

FAN_OUT = 8
START_LIMIT_S = 1.0
ACCEPTED_LIMIT_S = 10.0
BOMB_DONE_S = 240.0


def spawn(message: str) -> dict[str, Any]:
    return {"name": "spawn_agent", "arguments": {"message": message}}


WAIT_ALL = {"name": "wait_agents", "arguments": {}}


def splitting(child: str, done: str) -> str:
    """A task that spawns FAN_OUT copies of ``child``, waits for them all, then answers."""
    return "split\n" + mock_directive([{"calls": [spawn(child)] * FAN_OUT}, {"calls": [WAIT_ALL]}, {"text": done}])


LEAF = "leaf\n" + mock_directive({"text": "leaf done"})
BOMB = splitting(splitting(splitting(LEAF, "level 2 done"), "level 1 done"), "bomb done")


async def test_a_spawn_bomb_starves_no_one_and_finishes(tmp_path: Path) -> None:
    serve = Serve(tmp_path / "state")
    try:
        async with client_for(serve.state_dir) as client, trio.open_nursery() as nursery:
            bomb = (await client.request("thread.create", {"cwd": str(tmp_path)}))["thread_id"]
            await client.request("thread.send", {"thread_id": bomb, "text": BOMB})
            with trio.fail_after(60):  # in full swing: more sub-agents than slots, many waiting
                while (await client.request("status", {}))["threads"]["total"] < 150:
                    await trio.sleep(0.05)

            other = (await client.request("thread.create", {"cwd": str(tmp_path)}))["thread_id"]
            quick = "quick\n" + mock_directive({"text": "quick answer"})
            await client.request("thread.send", {"thread_id": other, "text": mock_directive([{"calls": [spawn(quick)]}, {"calls": [WAIT_ALL]}, {"text": "ok"}])})
            spawned, started, answered = await child_times(client, other)
            assert answered - started < START_LIMIT_S, f"the unrelated sub-agent ran {answered - started:.2f} s after its turn started"
            assert answered - spawned < ACCEPTED_LIMIT_S, f"the unrelated sub-agent answered {answered - spawned:.2f} s after its spawn"

            with trio.fail_after(BOMB_DONE_S):
                async with client.events(bomb, since=0) as stream:
                    async for event in stream:
                        if event["event"] in ("turn.completed", "turn.error", "turn.interrupted"):
                            break
            assert event["event"] == "turn.completed", event
            history = await client.request("thread.history", {"thread_id": bomb})
            assert history[-1]["content"][0]["text"] == "bomb done"
            waited = json.loads(next(item["output"] for item in history if item["type"] == "function_call_output" and "agents" in item["output"]))
            assert [agent["final_message"] for agent in waited["agents"]] == ["level 1 done"] * FAN_OUT
            nursery.cancel_scope.cancel()
    finally:
        serve.kill()


async def child_times(client: Any, parent: str) -> tuple[float, float, float]:
    """When the parent's sub-agent was spawned, when its first turn started and when it
    answered (the daemon's time stamps)."""
    with trio.fail_after(60):
        async with client.events(parent, since=0) as stream:
            async for event in stream:
                if event["event"] == "subagent.spawned":
                    spawned, child = event["ts"], event["data"]["agent_id"]
                    break
        async with client.events(child, since=0) as stream:
            async for event in stream:
                if event["event"] == "turn.started":
                    started = event["ts"]
                if event["event"] == "turn.completed":
                    return spawned, started, event["ts"]
    raise AssertionError("the sub-agent never answered")
