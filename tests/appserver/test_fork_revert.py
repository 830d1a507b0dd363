"""The Codex TUI's fork and rollback, as the app-server calls it sends them: ``thread/fork``
(through ``lastTurnId``, before ``beforeTurnId``) makes an echsd fork; ``thread/revert`` and
``thread/rollback`` undo turns (files back where a git snapshot has them, the turns gone
from what the thread shows); a turn that changed files sends ``turn/diff/updated``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from echsd.appserver.ids import thread_uuid
from tests.appserver.helpers import AppClient
from tests.helpers import Watch, mock_directive
from tests.workspace.gitrepo import make_repo


def append(line: str) -> list[dict[str, Any]]:
    return [{"calls": [{"name": "exec_command", "arguments": {"cmd": f"echo {line} >> notes.txt"}}]}, {"text": f"wrote {line}"}]


async def three_turns(appd: Any, repo: Path) -> tuple[str, list[str]]:
    thread_id = (await appd.ops.create_thread(cwd=str(repo)))["thread_id"]
    turns = []
    async with Watch(appd, thread_id) as watch:
        for line in ("one", "two", "three"):
            before = watch.last_seq
            await appd.ops.send(thread_id, f"add {line}\n" + mock_directive(append(line)))
            done = await watch.wait_type("turn.completed", after_seq=before)
            turns.append(done.data["turn_id"])
    return thread_id, turns


async def test_a_turn_that_changes_files_sends_its_diff(client: AppClient, appd: Any, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj", {"notes.txt": "start\n"})
    started = await client.start_thread(cwd=str(repo))
    uuid = started["thread"]["id"]
    turn_id = await client.run_turn(uuid, "add a line\n" + mock_directive(append("more")))
    diff = await client.notification("turn/diff/updated", turnId=turn_id)
    assert diff["threadId"] == uuid and "+more" in diff["diff"] and "notes.txt" in diff["diff"]
    completed = await client.notification("turn/completed")
    assert client.messages.index(next(m for m in client.messages if m.get("method") == "turn/diff/updated")) < client.messages.index(
        next(m for m in client.messages if m.get("method") == "turn/completed" and m["params"] is completed)
    )


async def test_fork_through_a_turn_and_before_a_turn(client: AppClient, appd: Any, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj", {"notes.txt": "start\n"})
    source, turns = await three_turns(appd, repo)
    forked = await client.call("thread/fork", {"threadId": thread_uuid(source), "lastTurnId": turns[0]})
    thread = forked["thread"]
    assert thread["forkedFromId"] == thread_uuid(source) and [t["id"] for t in thread["turns"]] == [turns[0]]
    started = await client.notification("thread/started")  # follows the answer
    assert started["thread"]["id"] == thread["id"]
    fork_id = thread["name"]
    assert (await appd.ops.get_thread(fork_id))["forked_at_turn"] == 1
    new_turn = await client.run_turn(thread["id"], "on the fork\n" + mock_directive({"text": "forked reply"}))
    await client.notification("turn/completed", threadId=thread["id"])
    assert new_turn not in turns and len(await appd.ops.history(source)) > len(await appd.ops.history(fork_id))

    before = await client.call("thread/fork", {"threadId": source, "beforeTurnId": turns[2], "excludeTurns": True})
    assert before["thread"]["turns"] == []
    listed = await client.call("thread/turns/list", {"threadId": before["thread"]["id"], "sortDirection": "asc"})
    assert [t["id"] for t in listed["data"]] == turns[:2]
    empty = await client.call("thread/fork", {"threadId": source, "beforeTurnId": turns[0]})
    assert empty["thread"]["turns"] == [] and await appd.ops.history(empty["thread"]["name"]) == []


async def test_revert_and_rollback_undo_turns(client: AppClient, appd: Any, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj", {"notes.txt": "start\n"})
    source, turns = await three_turns(appd, repo)
    uuid = thread_uuid(source)
    await client.call("thread/resume", {"threadId": uuid, "excludeTurns": True})
    at = len(client.messages)
    reverted = await client.call("thread/revert", {"threadId": uuid, "beforeTurnId": turns[2]})
    assert reverted["thread"]["id"] == uuid
    assert (repo / "notes.txt").read_text() == "start\none\ntwo\n"  # turn 3's line is gone
    await client.notification("thread/reverted", after=at, threadId=uuid)
    listed = await client.call("thread/turns/list", {"threadId": uuid, "sortDirection": "asc"})
    assert [t["id"] for t in listed["data"]] == turns[:2]
    read = await client.call("thread/read", {"threadId": uuid, "includeTurns": True})
    assert [t["id"] for t in read["thread"]["turns"]] == turns[:2]

    rolled = await client.call("thread/rollback", {"threadId": uuid, "numTurns": 1})
    client.violations = [v for v in client.violations if "thread/rollback" not in v]  # not in 0.169's schema: earlier clients' name
    assert [t["id"] for t in rolled["thread"]["turns"]] == turns[:1]
    assert (repo / "notes.txt").read_text() == "start\none\n"
    new_turn = await client.run_turn(uuid, "again\n" + mock_directive({"text": "after the rollback"}))
    await client.notification("turn/completed", after=at, threadId=uuid)
    listed = await client.call("thread/turns/list", {"threadId": uuid, "sortDirection": "asc"})
    assert [t["id"] for t in listed["data"]] == [turns[0], new_turn]
