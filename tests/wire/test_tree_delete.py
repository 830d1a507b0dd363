"""thread.tree and thread.delete over the wire: the tree with states; a deletion takes the
subtree with its history and events, and is refused while anything in it runs."""

from __future__ import annotations

from typing import Any

import pytest
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
