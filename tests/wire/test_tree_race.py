"""One authority over the thread tree: a child created while its ancestor is being killed
is either refused or killed too, never left alive under a killed ancestor (through the wire)."""

from __future__ import annotations

import random
from typing import Any

import trio

from echsd.wire.client import WireError, connect
from tests.helpers import mock_directive

SLOW = mock_directive({"text": " ".join(f"w{i}" for i in range(200)), "deltas": 200, "delay_ms": 5})
ROUNDS = 25


async def _yield_randomly(rng: random.Random) -> None:
    for _ in range(rng.randrange(6)):
        await trio.lowlevel.checkpoint()


async def test_create_child_racing_kill_of_an_ancestor_never_leaves_a_live_child(wired: Any) -> None:
    rng = random.Random(1234)
    state = wired.settings.state_dir
    outcomes = {"created": 0, "refused": 0}
    async with connect(state_dir=state) as killer, connect(state_dir=state) as creator:
        for round_ in range(ROUNDS):
            root = (await creator.create_thread())["thread_id"]
            middle = (await creator.create_thread(parent=root))["thread_id"]
            if round_ % 2:
                await creator.send(root, SLOW)  # a running turn makes the kill wait for its end
            created: list[str] = []

            async def create_under(parent: str) -> None:
                await _yield_randomly(rng)
                try:
                    created.append((await creator.create_thread(parent=parent))["thread_id"])
                    outcomes["created"] += 1
                except WireError as exc:
                    assert exc.code == "invalid_state", exc
                    outcomes["refused"] += 1

            async def kill_root() -> None:
                await _yield_randomly(rng)
                await killer.kill(root)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(kill_root)
                for parent in (root, middle, root, middle):
                    nursery.start_soon(create_under, parent)
            threads = {t["thread_id"]: t for t in await killer.list_threads()}
            for thread_id in [root, middle, *created]:
                assert threads[thread_id]["state"] == "killed", (round_, thread_id, threads[thread_id])
                assert threads[thread_id]["active_turn"] is None
    assert outcomes["created"] and outcomes["refused"], outcomes  # both sides of the race were seen


async def test_max_depth_holds_for_children_created_over_the_wire(tmp_path: Any, mock_upstream: Any, nursery: Any) -> None:
    from tests.wire.helpers import start_daemon, stop_daemon

    daemon = await start_daemon(nursery, tmp_path / "state", mock_upstream.base_url, tuning={"max_depth": 3})
    async with connect(state_dir=daemon.settings.state_dir) as client:
        chain = [(await client.create_thread())["thread_id"]]
        for _ in range(3):
            chain.append((await client.create_thread(parent=chain[-1]))["thread_id"])
        try:
            await client.create_thread(parent=chain[-1])
        except WireError as exc:
            assert exc.code == "invalid_state" and "max_depth=3" in str(exc), exc
        else:
            raise AssertionError("a child four levels deep was accepted")
        assert len(await client.list_threads()) == 4
    await stop_daemon(daemon)
