"""A node whose event loop is held busy for longer than its lease keeps its threads: the
lease is renewed from an OS thread of its own, so no other node adopts them mid-turn."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import trio

from echsd.daemon import Daemon
from tests.cli.helpers import client_for, gate_command
from tests.cluster.conftest import LEASE_S, Nodes
from tests.cluster.test_failover import Follower
from tests.helpers import make_settings, mock_directive

FROZEN_S = 3 * LEASE_S


def hold_the_loop(seconds: float) -> None:
    """Work that never yields to the event loop (CPU-bound, holding the GIL as Python does)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


async def test_a_node_whose_loop_is_busy_keeps_its_lease(nodes: Nodes, nursery: Any, tmp_path: Path) -> None:
    b = nodes.start("node-b")
    state = tmp_path / "node-a" / "state"
    state.mkdir(parents=True)
    (state / "config.toml").write_text(f"[tuning]\nlease_s = {LEASE_S}\n")
    a = Daemon(make_settings(state, None, store=nodes.url, node_id="node-a"))  # in this process: the test can hold its loop
    await nursery.start(a.run)
    gate = tmp_path / "gate"
    try:
        async with client_for(state) as on_a:
            thread_id = (await on_a.request("thread.create", {"cwd": str(tmp_path)}))["thread_id"]
            waiting = {"calls": [{"name": "exec_command", "arguments": {"cmd": gate_command(gate), "yield_time_ms": 30000}}]}
            watch = Follower()
            async with trio.open_nursery() as watching:
                watching.start_soon(watch.run, on_a, thread_id)
                await on_a.request("thread.send", {"thread_id": thread_id, "text": mock_directive([waiting, {"text": "through"}])})
                await watch.wait_for(lambda e: e["event"] == "tool.started")

                hold_the_loop(FROZEN_S)  # node B would adopt after LEASE_S plus its next scan

                async with client_for(b.state_dir) as on_b:
                    status = await on_b.request("status", {})
                    assert {n["node_id"]: n["alive"] for n in status["nodes"]} == {"node-a": True, "node-b": True}
                    assert (await on_b.request("thread.get", {"thread_id": thread_id}))["node"] == "node-a"
                gate.touch()
                await watch.wait_for(lambda e: e["event"] in ("turn.completed", "turn.interrupted"))
                watching.cancel_scope.cancel()
            assert [e["event"] for e in watch.events if e["event"].startswith("turn.")][-1] == "turn.completed"
            assert a.cluster is not None and a.cluster.adoptions == 0
    finally:
        gate.touch()
        a.request_stop()
        with trio.fail_after(15):
            await a.wait_stopped()
