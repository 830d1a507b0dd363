"""A sub-agent placed on another node than its parent's reports back to the parent, and
counts its depth in the tree from its parent's, wherever that runs."""

from __future__ import annotations

import trio

from echsd.wire.errors import WireError

from tests.cli.helpers import client_for
from tests.cluster.conftest import Nodes
from tests.cluster.test_failover import Follower


async def test_a_child_on_node_b_reports_to_its_parent_on_node_a(nodes: Nodes) -> None:
    a = nodes.start("node-a")
    b = nodes.start("node-b")
    async with client_for(a.state_dir) as on_a, client_for(b.state_dir) as on_b:
        parent = (await on_a.request("thread.create", {}))["thread_id"]
        child = await on_a.request("thread.create", {"parent": parent, "node": "node-b"})
        assert child["node"] == "node-b" and child["parent"] == parent
        assert (await on_b.request("thread.get", {"thread_id": child["thread_id"]}))["node"] == "node-b"
        assert child["thread_id"] in (await on_b.request("thread.get", {"thread_id": parent}))["children"]

        watch = Follower()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(watch.run, on_a, parent)
            await on_a.request("thread.send", {"thread_id": child["thread_id"], "text": "report back"})
            completed = await watch.wait_for(lambda e: e["event"] == "subagent.completed")
            nursery.cancel_scope.cancel()
        assert completed["data"]["agent_id"] == child["thread_id"]
        assert completed["data"]["status"] == "completed"
        assert completed["data"]["final_message"] == "mock reply to: report back"

        # Killing the parent on A kills the child on B.
        killed = await on_a.request("thread.kill", {"thread_id": parent})
        assert sorted(killed["killed"]) == sorted([parent, child["thread_id"]])
        assert (await on_b.request("thread.get", {"thread_id": child["thread_id"]}))["state"] == "killed"


async def test_a_child_on_node_b_knows_its_depth_from_its_parent_on_node_a(nodes: Nodes) -> None:
    nodes.start("node-a")
    b = nodes.start("node-b", tuning="max_depth = 1")
    async with client_for(nodes.state_dir("node-a")) as on_a, client_for(b.state_dir) as on_b:
        parent = (await on_a.request("thread.create", {}))["thread_id"]
        child = (await on_a.request("thread.create", {"parent": parent, "node": "node-b"}))["thread_id"]
        assert (await on_b.request("thread.get", {"thread_id": child}))["node"] == "node-b"
        try:
            await on_b.request("thread.create", {"parent": child})  # depth 2, which node B allows no more
        except WireError as exc:
            assert exc.code == "invalid_state" and "would be 2 levels deep" in exc.message and "max_depth=1" in exc.message, exc
        else:
            raise AssertionError("node B took a grandchild past max_depth: it counted the child's depth from itself")
