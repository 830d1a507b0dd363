"""Threads made elsewhere (through echsd's own API, as ``echs`` makes them) seen and driven
through the listener: listed by their ``thr_`` name, resumed, read, paged, watched live."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from echsd.appserver.ids import thread_uuid
from tests.appserver.helpers import AppClient, RpcFailed, app_client
from tests.helpers import Watch, mock_directive

STEPS = [{"text": "Looking.", "calls": [{"name": "exec_command", "arguments": {"cmd": "echo native"}}]}, {"text": "Seen it."}]


async def _native_thread(appd: Any, workdir: Path) -> str:
    """A thread made and run through the daemon's own service, with one finished turn."""
    thread_id = (await appd.ops.create_thread(cwd=str(workdir)))["thread_id"]
    async with Watch(appd, thread_id) as watch:
        await appd.ops.send(thread_id, "first question\n" + mock_directive(STEPS))
        await watch.wait_type("turn.completed")
    return str(thread_id)


@pytest.mark.parametrize("by", ["uuid", "name"])
async def test_resume_a_thread_made_through_the_native_api(client: AppClient, appd: Any, workdir: Path, by: str) -> None:
    thread_id = await _native_thread(appd, workdir)
    listed = (await client.call("thread/list", {"limit": 100, "sourceKinds": ["cli", "vscode"], "sortKey": "created_at"}))["data"]
    entry = next(t for t in listed if t["name"] == thread_id)
    assert entry["id"] == thread_uuid(thread_id) and entry["preview"].startswith("first question")
    resumed = await client.call("thread/resume", {"threadId": entry["id"] if by == "uuid" else thread_id, "excludeTurns": True})
    assert resumed["thread"]["id"] == entry["id"] and resumed["cwd"] == str(workdir) and resumed["thread"]["turns"] == []
    read = (await client.call("thread/read", {"threadId": entry["id"], "includeTurns": True}))["thread"]
    [turn] = read["turns"]
    assert turn["status"] == "completed"
    kinds = [(item["type"], item.get("text") or item.get("command") or item.get("content", [{}])[0].get("text")) for item in turn["items"]]
    assert kinds[0] == ("userMessage", "first question\n" + mock_directive(STEPS))
    assert kinds[1:] == [("agentMessage", "Looking."), ("commandExecution", "bash -c 'echo native'"), ("agentMessage", "Seen it.")]
    command = turn["items"][2]
    assert command["aggregatedOutput"] == "native\n" and command["exitCode"] == 0


async def test_input_sent_elsewhere_shows_up_live(client: AppClient, appd: Any, workdir: Path) -> None:
    thread_id = await _native_thread(appd, workdir)
    await client.call("thread/resume", {"threadId": thread_id})
    at = len(client.messages)
    await appd.ops.send(thread_id, "from echs")  # what `echs send` does
    started = await client.notification("turn/started", after=at)
    user = await client.wait_for(lambda m: m.get("method") == "item/completed" and m["params"]["item"]["type"] == "userMessage", after=at)
    assert user["params"]["item"]["content"][0]["text"] == "from echs" and user["params"]["item"]["clientId"] is None
    done = await client.notification("turn/completed", after=at)
    assert done["turn"]["id"] == started["turn"]["id"] and done["turn"]["items"][0]["text"] == "mock reply to: from echs"


async def test_attach_to_a_running_turn_and_interrupt_it(appd: Any, workdir: Path) -> None:
    thread_id = (await appd.ops.create_thread(cwd=str(workdir)))["thread_id"]
    async with Watch(appd, thread_id) as watch:
        await appd.ops.send(thread_id, mock_directive({"text": " ".join(["word"] * 200), "delay_ms": 30}))
        await watch.wait_type("turn.delta")
        async with app_client(appd) as client:
            await client.initialize()
            resumed = await client.call("thread/resume", {"threadId": thread_id})
            assert resumed["thread"]["status"] == {"type": "active", "activeFlags": []}
            [running] = resumed["thread"]["turns"]
            assert running["status"] == "inProgress"
            await client.notification("item/agentMessage/delta")  # the rest of the turn streams in
            await client.call("turn/interrupt", {"threadId": resumed["thread"]["id"], "turnId": running["id"]})
            done = await client.notification("turn/completed")
            assert done["turn"] == done["turn"] | {"id": running["id"], "status": "interrupted"}
        await watch.wait_type("turn.interrupted")


async def test_pages_of_turns_and_items(client: AppClient, appd: Any, workdir: Path) -> None:
    thread = (await client.start_thread(cwd=str(workdir)))["thread"]["id"]
    turns = []
    for text in ("one", "two", "three"):
        turns.append(await client.run_turn(thread, text))
        await client.wait_for(lambda m: m.get("method") == "turn/completed" and m["params"]["turn"]["id"] == turns[-1])
    newest = await client.call("thread/turns/list", {"threadId": thread, "limit": 2})
    assert [t["id"] for t in newest["data"]] == turns[:0:-1] and newest["nextCursor"]
    rest = await client.call("thread/turns/list", {"threadId": thread, "limit": 2, "cursor": newest["nextCursor"]})
    assert [t["id"] for t in rest["data"]] == turns[:1] and rest["nextCursor"] is None
    oldest = await client.call("thread/turns/list", {"threadId": thread, "sortDirection": "asc", "itemsView": "notLoaded", "limit": 2})
    assert [t["id"] for t in oldest["data"]] == turns[:2] and all(t["items"] == [] for t in oldest["data"])
    later = await client.call("thread/turns/list", {"threadId": thread, "sortDirection": "asc", "cursor": oldest["nextCursor"]})
    assert [t["id"] for t in later["data"]] == turns[2:] and later["nextCursor"] is None
    items = (await client.call("thread/items/list", {"threadId": thread, "sortDirection": "asc"}))["data"]
    assert [(e["turnId"], e["item"]["type"]) for e in items] == [(t, kind) for t in turns for kind in ("userMessage", "agentMessage")]
    second = await client.call("thread/items/list", {"threadId": thread, "turnId": turns[1], "sortDirection": "asc"})
    assert [e["item"]["type"] for e in second["data"]] == ["userMessage", "agentMessage"]
    after = await client.call("thread/items/list", {"threadId": thread, "sortDirection": "asc", "cursor": {"type": "item", "itemId": items[3]["item"]["id"]}})
    assert after["data"] == items[4:]
    before = await client.call("thread/items/list", {"threadId": thread, "cursor": {"type": "item", "itemId": items[3]["item"]["id"]}})
    assert before["data"] == items[2::-1]
    for cursor in ("bogus", "ec1.e30", {"type": "turn"}):
        with pytest.raises(RpcFailed, match="cursor"):
            await client.call("thread/items/list", {"threadId": thread, "cursor": cursor})
    with pytest.raises(RpcFailed, match="no turn"):
        await client.call("thread/items/list", {"threadId": thread, "turnId": "turn_nope"})


async def test_list_filters(client: AppClient, appd: Any, tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir(), second.mkdir()
    one = (await client.start_thread(cwd=str(first)))["thread"]
    two = (await client.start_thread(cwd=str(second)))["thread"]
    await client.run_turn(two["id"], "find the needle")
    await client.notification("turn/completed")
    names = lambda result: [t["name"] for t in result["data"]]  # noqa: E731
    assert names(await client.call("thread/list", {})) == [two["name"], one["name"]]
    assert names(await client.call("thread/list", {"sortDirection": "asc"})) == [one["name"], two["name"]]
    assert names(await client.call("thread/list", {"cwd": str(first)})) == [one["name"]]
    assert names(await client.call("thread/list", {"searchTerm": "needle"})) == [two["name"]]
    assert names(await client.call("thread/list", {"searchTerm": one["name"]})) == [one["name"]]
    assert names(await client.call("thread/list", {"archived": True})) == []
    page = await client.call("thread/list", {"limit": 1})
    assert names(page) == [two["name"]] and names(await client.call("thread/list", {"cursor": page["nextCursor"]})) == [one["name"]]


async def test_unsubscribe_stops_the_notifications(client: AppClient, appd: Any) -> None:
    thread = (await client.start_thread())["thread"]
    assert await client.call("thread/unsubscribe", {"threadId": thread["id"]}) == {"status": "unsubscribed"}
    assert await client.call("thread/unsubscribe", {"threadId": thread["id"]}) == {"status": "notSubscribed"}
    assert (await client.call("thread/loaded/list", {}))["data"] == []
    async with Watch(appd, thread["name"]) as watch:
        await appd.ops.send(thread["name"], "unseen")
        await watch.wait_type("turn.completed")
    await client.call("account/read", {})  # a round trip: anything sent before it has arrived
    assert client.of_method("turn/started") == []


async def test_delete_removes_a_thread_with_its_children(client: AppClient, appd: Any, workdir: Path) -> None:
    parent = await _native_thread(appd, workdir)
    child = (await appd.ops.create_thread(cwd=str(workdir), parent=parent))["thread_id"]
    await client.call("thread/resume", {"threadId": parent, "excludeTurns": True})
    assert await client.call("thread/delete", {"threadId": thread_uuid(parent)}) == {}
    await client.notification("thread/deleted", threadId=thread_uuid(child))
    assert sorted(p["threadId"] for p in client.of_method("thread/deleted")) == sorted([thread_uuid(parent), thread_uuid(child)])
    assert await appd.ops.list_threads() == [] and (await client.call("thread/loaded/list", {}))["data"] == []
    with pytest.raises(RpcFailed, match="not_found"):
        await client.call("thread/delete", {"threadId": parent})


async def test_thread_name_set_renames_the_echsd_thread(client: AppClient, appd: Any, workdir: Path) -> None:
    thread_id = (await appd.ops.create_thread(cwd=str(workdir)))["thread_id"]
    uid = thread_uuid(thread_id)
    await client.call("thread/resume", {"threadId": uid, "excludeTurns": True})
    assert await client.call("thread/name/set", {"threadId": uid, "name": "triage"}) == {}
    assert await client.notification("thread/name/updated") == {"threadId": uid, "threadName": "triage"}
    assert (await appd.ops.get_thread(thread_id))["name"] == "triage"
    with pytest.raises(RpcFailed) as info:  # the native wire's limit, at this door too
        await client.call("thread/name/set", {"threadId": uid, "name": "x" * 300})
    assert "256" in info.value.message
    assert (await appd.ops.get_thread(thread_id))["name"] == "triage"
