"""thread.tree and thread.delete over the wire: the tree with states; a deletion takes the
subtree with its history and events, and is refused while anything in it runs."""

from __future__ import annotations

from typing import Any

import pytest
import trio
from echsd.store import queries
from echsd.wire.client import WireError, connect
from tests.helpers import mock_directive

SLOW = mock_directive({"text": " ".join(f"w{i}" for i in range(200)), "deltas": 200, "delay_ms": 5})


async def test_tree_and_delete(wired: Any) -> None:
    state = wired.settings.state_dir
    async with connect(state_dir=state) as client:
        root = (await client.create_thread(cwd=str(state)))["thread_id"]
        child = (await client.create_thread(cwd=str(state), parent=root))["thread_id"]
        grandchild = (await client.create_thread(cwd=str(state), parent=child))["thread_id"]
        other = (await client.create_thread(cwd=str(state)))["thread_id"]
        tree = await client.thread_tree(root)
        assert tree == [{"thread_id": root, "state": "idle", "children": [{"thread_id": child, "state": "idle", "children": [{"thread_id": grandchild, "state": "idle", "children": []}]}]}]
        assert [node["thread_id"] for node in await client.thread_tree()] == [root, other]

        await client.send(grandchild, SLOW)
        with pytest.raises(WireError) as running:
            await client.delete_thread(root)
        assert running.value.code == "invalid_state" and "running" in running.value.message
        await client.send(root, "still usable after the refusal")  # nothing stayed retired
        await client.interrupt(grandchild)
        async with client.events(root) as events:
            async for event in events:
                if event["event"] == "turn.completed":
                    break

        deleted = await client.delete_thread(child)
        assert sorted(deleted["deleted"]) == sorted([child, grandchild])
        assert (await client.get_thread(root))["children"] == []
        for gone in (child, grandchild):
            with pytest.raises(WireError) as missing:
                await client.get_thread(gone)
            assert missing.value.code == "not_found"
        rows = await wired.store.read(lambda conn: (queries.read_events(conn, child, 0, None), queries.load_items(conn, grandchild)))
        assert rows == ([], [])
        assert [node["thread_id"] for node in await client.thread_tree()] == [root, other]


async def test_delete_ends_the_streams_of_the_deleted_threads(wired: Any) -> None:
    """Each deleted thread's subscribers get ``thread.deleted`` (numbered after its last
    event, naming the thread asked for), then nothing: the client's stream ends; a ``*``
    subscriber sees one per thread; the thread's own stream never gets it replayed."""
    state = wired.settings.state_dir
    async with connect(state_dir=state) as watcher, connect(state_dir=state) as everyone, connect(state_dir=state) as client:
        parent = (await client.create_thread(cwd=str(state)))["thread_id"]
        child = (await client.create_thread(cwd=str(state), parent=parent))["thread_id"]
        last = {tid: (await client.get_thread(tid))["last_seq"] for tid in (parent, child)}
        seen: dict[str, list[dict[str, Any]]] = {parent: [], child: []}
        overall: list[dict[str, Any]] = []
        replayed = trio.Event()  # the * stream caught up with both logs
        with trio.fail_after(15):
            async with trio.open_nursery() as nursery:

                async def follow(tid: str) -> None:
                    async with watcher.events(tid, since=last[tid]) as stream:
                        async for event in stream:
                            seen[tid].append(event)  # the loop ends by itself after thread.deleted

                async def follow_all() -> None:
                    async with everyone.events("*", since=0) as stream:
                        async for event in stream:
                            overall.append(event)
                            if len(overall) == last[parent] + last[child]:
                                replayed.set()
                            if sum(e["event"] == "thread.deleted" for e in overall) == 2:
                                return

                nursery.start_soon(follow, parent)
                nursery.start_soon(follow, child)
                nursery.start_soon(follow_all)
                await replayed.wait()
                assert (await client.delete_thread(parent))["deleted"] == [parent, child]
        for tid in (parent, child):
            assert [(e["event"], e["seq"], e["data"]) for e in seen[tid]] == [("thread.deleted", last[tid] + 1, {"root": parent})]
        deleted = [(e["thread_id"], e["seq"]) for e in overall if e["event"] == "thread.deleted"]
        assert sorted(deleted) == sorted((tid, last[tid] + 1) for tid in (parent, child))
        with pytest.raises(WireError) as gone:
            await client.subscribe(parent, since=0)
        assert gone.value.code == "not_found"
