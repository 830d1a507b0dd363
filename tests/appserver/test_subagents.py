"""Sub-agents through the listener: the parent's client sees a spawn, a wait and the
child's end as collab items, and can open the child thread by the UUID they name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from echsd.appserver.ids import thread_id_of
from tests.appserver.helpers import AppClient
from tests.helpers import mock_directive


def collab(client: AppClient, method: str) -> list[dict[str, Any]]:
    return [p["item"] for p in client.of_method(method) if p["item"]["type"] == "collabAgentToolCall"]


async def test_spawn_wait_and_the_childs_end(client: AppClient, appd: Any, workdir: Path) -> None:
    started = (await client.start_thread(cwd=str(workdir)))["thread"]
    steps = [
        {"calls": [{"name": "spawn_agent", "arguments": {"message": "count the files", "agent_type": "explorer"}}]},
        {"calls": [{"name": "wait_agents", "arguments": {"timeout_ms": 20000}}]},
        {"text": "the agent answered"},
    ]
    turn = await client.run_turn(started["id"], mock_directive(steps))
    await client.wait_for(lambda m: m.get("method") == "turn/completed" and m["params"]["turn"]["id"] == turn)
    spawn_started, wait_started = collab(client, "item/started")
    spawn, wait = collab(client, "item/completed")
    assert (spawn_started["tool"], spawn_started["status"], spawn_started["prompt"]) == ("spawnAgent", "inProgress", "count the files")
    [child] = spawn["receiverThreadIds"]
    child_id = thread_id_of(child)
    assert child_id in (await appd.ops.get_thread(started["name"]))["children"]
    assert spawn["status"] == "completed" and spawn["senderThreadId"] == started["id"]
    assert spawn["model"] == (await appd.ops.get_thread(child_id))["config"]["model"]
    assert (wait_started["tool"], wait["tool"], wait["status"], wait["receiverThreadIds"]) == ("wait", "wait", "completed", [child])
    assert wait["agentsStates"] == {child: {"status": "completed", "message": "mock reply to: count the files"}}
    # the child's end reaches the parent's log on its own schedule: during the turn or after it
    ended = await client.wait_for(lambda m: m.get("method") == "item/completed" and m["params"]["item"]["type"] == "subAgentActivity")
    activity = ended["params"]
    assert activity["turnId"] == turn and activity["item"]["agentThreadId"] == child and activity["item"]["kind"] == "completed"
    opened = (await client.call("thread/read", {"threadId": child, "includeTurns": True}))["thread"]
    assert opened["parentThreadId"] == started["id"] and opened["agentRole"] == "explorer"
    assert opened["turns"][0]["items"][-1] == {"type": "agentMessage", "id": opened["turns"][0]["items"][-1]["id"], "text": "mock reply to: count the files"}
