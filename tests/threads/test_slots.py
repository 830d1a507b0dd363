"""Sub-agent slots (``echsd.threads.slots``): fair between trees, lent back while waiting."""

from __future__ import annotations

from typing import Any

import trio
import trio.testing

from echsd.threads.slots import SubagentSlots


async def hold(slots: SubagentSlots, thread_id: str, tree: str, got: list[str], release: trio.Event) -> None:
    async with slots.held(thread_id, tree):
        got.append(thread_id)
        await release.wait()


async def test_a_freed_slot_goes_to_the_tree_holding_fewest(nursery: Any) -> None:
    slots, got = SubagentSlots(2), []
    releases = {name: trio.Event() for name in ("a1", "a2", "a3", "a4", "b1")}
    for name in ("a1", "a2", "a3", "a4"):  # tree a takes both slots and queues two more
        nursery.start_soon(hold, slots, name, "a", got, releases[name])
        await trio.testing.wait_all_tasks_blocked()
    nursery.start_soon(hold, slots, "b1", "b", got, releases["b1"])  # tree b comes last
    await trio.testing.wait_all_tasks_blocked()
    assert got == ["a1", "a2"] and not slots.free_for("b")
    releases["a1"].set()
    await trio.testing.wait_all_tasks_blocked()
    assert got == ["a1", "a2", "b1"]  # before a3, which waited longer
    releases["a2"].set()
    await trio.testing.wait_all_tasks_blocked()
    assert got == ["a1", "a2", "b1", "a3"]  # then a's, first come first served
    for event in releases.values():
        event.set()


async def test_a_waiting_parent_lends_its_slot(nursery: Any) -> None:
    slots, got = SubagentSlots(1), []
    done_waiting, child_release = trio.Event(), trio.Event()
    back: list[str] = []

    async def parent() -> None:
        async with slots.held("parent", "a"):
            async with slots.lent("parent"):
                await done_waiting.wait()
            back.append("parent")  # runs again only with a slot of its own

    nursery.start_soon(parent)
    await trio.testing.wait_all_tasks_blocked()
    nursery.start_soon(hold, slots, "child", "a", got, child_release)
    await trio.testing.wait_all_tasks_blocked()
    assert got == ["child"]  # the parent's slot went to its child
    done_waiting.set()
    await trio.testing.wait_all_tasks_blocked()
    assert back == []  # the parent waits for a slot again
    child_release.set()
    await trio.testing.wait_all_tasks_blocked()
    assert back == ["parent"] and slots.in_use == 0


async def test_cancelled_waits_give_nothing_back_twice() -> None:
    slots = SubagentSlots(1)
    async with slots.held("holder", "a"):
        with trio.move_on_after(0.01):
            async with slots.held("queued", "b"):
                raise AssertionError("got a slot that was taken")
        assert slots.in_use == 1 and not slots.free_for("b")
        with trio.CancelScope() as scope:
            async with slots.lent("holder"):
                scope.cancel()
                await trio.sleep_forever()
        assert slots.in_use == 0  # the cancelled wait left without a slot; none is released twice
    assert slots.in_use == 0 and slots.free_for("b")


async def test_a_root_thread_lends_nothing() -> None:
    slots = SubagentSlots(1)
    async with slots.lent("root"):
        assert slots.in_use == 0
    assert slots.in_use == 0
