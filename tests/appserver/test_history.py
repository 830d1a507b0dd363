"""Pages of a thread's past read only what they need, and say the same as a replay of the
whole log: across a cwd change, an exec session that outlives its turn, and cursors in
both directions."""

from __future__ import annotations

from pathlib import Path
from typing import Any, AsyncIterator

import pytest
import trio
from echsd.ops.threads import Events
from echsd.router import reads
from echsd.router.handlers import NODE

from tests.appserver.helpers import AppClient, start_daemon
from tests.helpers import Watch, mock_directive, one_event_per_delta


async def turn(appd: Any, thread_id: str, steps: Any) -> None:
    async with Watch(appd, thread_id) as watch:
        before = watch.last_seq
        await appd.ops.send(thread_id, mock_directive(steps))
        await watch.wait_type("turn.completed", after_seq=before)


@pytest.fixture
async def appd(tmp_path: Any, mock_upstream: Any, nursery: Any) -> AsyncIterator[Any]:
    """The app-server daemon, one event per model delta: a long log
    of many events is what the TUI pages through."""
    daemon = await start_daemon(nursery, one_event_per_delta(tmp_path / "state"), mock_upstream.base_url)
    yield daemon
    daemon.request_stop()
    with trio.fail_after(15):
        await daemon.wait_stopped()


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


@pytest.fixture
async def eventful(appd: Any, workdir: Path, tmp_path: Path) -> str:
    """A thread of seven turns: commands, a cwd change, an exec session that starts in the
    second turn and ends in the sixth."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    thread_id = str((await appd.ops.create_thread(cwd=str(workdir)))["thread_id"])
    await turn(appd, thread_id, {"text": "first"})
    await turn(appd, thread_id, [{"calls": [call("exec_command", cmd="read x; echo got-$x", tty=True, yield_time_ms=300)]}, {"text": "waiting"}])
    session = next(e["data"]["session_id"] for e in await appd.ops.thread_events(thread_id) if e["data"].get("session_id"))
    await turn(appd, thread_id, [{"calls": [call("exec_command", cmd="pwd")]}, {"text": "here"}])
    await appd.ops.configure(thread_id, {"cwd": str(elsewhere)})  # what `echs config ID cwd=...` does
    await turn(appd, thread_id, [{"calls": [call("exec_command", cmd="pwd")]}, {"text": "there"}])
    await turn(appd, thread_id, {"text": "nothing to do"})
    await turn(appd, thread_id, [{"calls": [call("write_stdin", session_id=session, chars="hi\n", yield_time_ms=3000)]}, {"text": "it ended"}])
    await turn(appd, thread_id, [{"calls": [call("exec_command", cmd="echo last")]}, {"text": "done"}])
    return thread_id


async def pages(client: AppClient, method: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    """Every page of a list, following nextCursor."""
    data, cursor = [], None
    while True:
        page = await client.call(method, params | ({"cursor": cursor} if cursor else {}))
        data += page["data"]
        cursor = page["nextCursor"]
        if cursor is None:
            return data


async def test_pages_say_what_the_whole_log_says(client: AppClient, eventful: str) -> None:
    full = (await client.call("thread/read", {"threadId": eventful, "includeTurns": True}))["thread"]["turns"]
    assert len(full) == 7
    commands = [item for t in full for item in t["items"] if item["type"] == "commandExecution"]
    assert [c["cwd"] for c in commands] == [commands[0]["cwd"]] * 2 + [commands[3]["cwd"]] * 2
    assert commands[0]["cwd"] != commands[3]["cwd"]  # before and after the change
    session = commands[0]
    assert (session["status"], session["exitCode"], session["source"]) == ("completed", 0, "unifiedExecStartup")
    assert "got-hi" in session["aggregatedOutput"]  # ended four turns later, shown in its own turn
    entries = [{"turnId": t["id"], "item": item} for t in full for item in t["items"]]
    for limit in (1, 2, 3, 7):
        for direction, order in (("desc", -1), ("asc", 1)):
            turns = await pages(client, "thread/turns/list", {"threadId": eventful, "limit": limit, "sortDirection": direction})
            assert turns == full[::order], (limit, direction)
            items = await pages(client, "thread/items/list", {"threadId": eventful, "limit": limit, "sortDirection": direction})
            assert [{"turnId": e["turnId"], "item": e["item"]} for e in items] == entries[::order], (limit, direction)
    for one in full:
        items = await pages(client, "thread/items/list", {"threadId": eventful, "turnId": one["id"], "limit": 2, "sortDirection": "asc"})
        assert [e["item"] for e in items] == one["items"]


async def test_the_tui_resume_reads_the_newest_part(client: AppClient, appd: Any, workdir: Path, monkeypatch: Any) -> None:
    thread_id = str((await appd.ops.create_thread(cwd=str(workdir)))["thread_id"])
    async with Watch(appd, thread_id) as watch:
        for number in range(200):  # queued behind each other: one turn each
            await appd.ops.send(thread_id, f"question {number}")
        await watch.wait_count("turn.completed", 200, timeout=60)
    total = (await appd.ops.get_thread(thread_id))["last_seq"]
    full = (await client.call("thread/read", {"threadId": thread_id, "includeTurns": True}))["thread"]["turns"]
    read: list[int] = []
    read_events = reads.events

    async def counted(node: Any, op: Any) -> Any:
        page = await read_events(node, op)
        read.append(len(page))
        return page

    monkeypatch.setitem(NODE, Events, counted)
    resumed = await client.call("thread/resume", {"threadId": thread_id, "excludeTurns": True})
    assert resumed["thread"]["historyMode"] == "paginated" and resumed["thread"]["turns"] == []
    turns = await client.call("thread/turns/list", {"threadId": thread_id, "limit": 5, "sortDirection": "desc", "itemsView": "notLoaded"})
    items = await client.call("thread/items/list", {"threadId": thread_id, "limit": 12, "sortDirection": "desc"})
    assert sum(read) < total / 3, (sum(read), total)  # replaying the whole log would read it three times
    assert [t["id"] for t in turns["data"]] == [t["id"] for t in full[:-6:-1]] and turns["nextCursor"]
    assert [e["item"] for e in items["data"]] == [item for t in full[-6:] for item in t["items"]][::-1]
    usage = await client.notification("thread/tokenUsage/updated", threadId=resumed["thread"]["id"])
    assert usage["tokenUsage"]["total"]["inputTokens"] == (await appd.ops.get_thread(thread_id))["usage"]["input_tokens"] > 0
    assert usage["turnId"] == full[-1]["id"] and 0 < usage["tokenUsage"]["last"]["inputTokens"] < usage["tokenUsage"]["total"]["inputTokens"]
