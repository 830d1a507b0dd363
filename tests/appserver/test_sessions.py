"""Exec sessions through the listener: a command still running when ``exec_command``
returns keeps its item open across turns, ``write_stdin`` is its terminal interaction,
and the item completes (in its own turn) when the command exits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.appserver.helpers import AppClient
from tests.helpers import mock_directive


async def turn_done(client: AppClient, turn_id: str) -> dict[str, Any]:
    done = await client.wait_for(lambda m: m.get("method") == "turn/completed" and m["params"]["turn"]["id"] == turn_id)
    return done["params"]  # type: ignore[no-any-return]


def commands(client: AppClient, method: str) -> list[dict[str, Any]]:
    return [p for p in client.of_method(method) if p["item"]["type"] == "commandExecution"]


async def test_a_session_spans_turns_until_its_command_exits(client: AppClient, workdir: Path) -> None:
    thread = (await client.start_thread(cwd=str(workdir)))["thread"]["id"]
    start = {"name": "exec_command", "arguments": {"cmd": "python3 -iq", "tty": True, "yield_time_ms": 1000}}
    first = await client.run_turn(thread, mock_directive([{"calls": [start]}, {"text": "python runs"}]))
    await turn_done(client, first)
    begun, again = commands(client, "item/started")
    assert begun["item"]["id"] == again["item"]["id"] and begun["item"]["status"] == again["item"]["status"] == "inProgress"
    session, item_id = again["item"]["processId"], again["item"]["id"]
    assert session.isdigit() and again["item"]["source"] == "unifiedExecStartup" and again["turnId"] == first
    assert commands(client, "item/completed") == []  # still running: not completed

    poke = {"name": "write_stdin", "arguments": {"session_id": int(session), "chars": "print(6*7)\n", "yield_time_ms": 1000}}
    leave = {"name": "write_stdin", "arguments": {"session_id": int(session), "chars": "exit()\n", "yield_time_ms": 3000}}
    second = await client.run_turn(thread, mock_directive([{"calls": [poke]}, {"calls": [leave]}, {"text": "python left"}]))
    await turn_done(client, second)
    interactions = client.of_method("item/commandExecution/terminalInteraction")
    assert [(i["itemId"], i["processId"], i["stdin"], i["turnId"]) for i in interactions] == [
        (item_id, session, "print(6*7)\n", second),
        (item_id, session, "exit()\n", second),
    ]
    assert "42" in "".join(d["delta"] for d in client.of_method("item/commandExecution/outputDelta") if d["itemId"] == item_id)
    [done] = commands(client, "item/completed")
    item = done["item"]
    assert done["turnId"] == first and (item["id"], item["status"], item["exitCode"], item["processId"]) == (item_id, "completed", 0, session)
    assert "42" in item["aggregatedOutput"]
    assert len(commands(client, "item/started")) == 2  # write_stdin is no item of its own
    past = (await client.call("thread/turns/list", {"threadId": thread, "sortDirection": "asc", "itemsView": "full"}))["data"]
    assert [i for i in past[0]["items"] if i["id"] == item_id] == [item]  # the history shows how it ended
    assert all(i["type"] != "commandExecution" for i in past[1]["items"])


async def test_a_session_dies_with_its_thread_paused(client: AppClient, appd: Any, workdir: Path) -> None:
    started = (await client.start_thread(cwd=str(workdir)))["thread"]
    call = {"name": "exec_command", "arguments": {"cmd": "sleep 60", "yield_time_ms": 250}}
    turn = await client.run_turn(started["id"], mock_directive([{"calls": [call]}, {"text": "left sleeping"}]))
    await turn_done(client, turn)
    assert commands(client, "item/completed") == []
    await appd.ops.pause(started["name"])  # what `echs pause` does
    ended = await client.wait_for(lambda m: m.get("method") == "item/completed" and m["params"]["item"]["type"] == "commandExecution")
    assert ended["params"]["item"]["status"] == "failed" and ended["params"]["turnId"] == turn
