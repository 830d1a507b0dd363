"""One driver per thread: what a busy user (or program) does to it, over and over.

Each action is a turn the mock model scripts (``scripts``), sometimes with input queued
or steered into it, an interrupt, a pause, a kill, or sub-agents; between actions the
driver thinks for a moment. After an interrupt, pause or kill that stopped a running tool,
every process of that tool must be gone within ``GRACE_S``.
"""

from __future__ import annotations

import random
from typing import Any

import trio

from bench.soak import scripts
from bench.soak.checks import check_over_wire
from bench.soak.state import SETTLE_S, Slot, Soak
from echsd.wire.client import WireError

GRACE_S = 10.0  # for a stopped tool's processes to disappear
ACTIONS = {"tools": 30, "stream": 20, "steer": 15, "tool_stop": 15, "agents": 12, "pause": 8}


class Driver:
    def __init__(self, soak: Soak, slot: Slot, index: int) -> None:
        self.soak = soak
        self.slot = slot
        self.index = index
        self.rng = random.Random(soak.rng.random())
        self.cwd = soak.out / "work" / f"d{index}"
        self.tid = ""
        self.n = 0

    async def run(self) -> None:
        self.cwd.mkdir(parents=True, exist_ok=True)
        await self.new_thread()
        names, weights = list(ACTIONS), list(ACTIONS.values())
        while True:
            await trio.sleep(self.rng.uniform(*self.soak.options.think_s))
            action = self.rng.choices(names, weights)[0]
            try:
                await getattr(self, action)()
                self.soak.actions[action] += 1
            except WireError as exc:  # counted by the slot, by op
                if exc.code == "invalid_state":
                    await self.replace_if_killed()
            except trio.TooSlowError as exc:
                self.soak.error(action, exc, thread_id=self.tid)

    async def replace_if_killed(self) -> None:
        """Go on with a new thread if this one is killed: a kill whose answer a restart
        lost is retried and refused as already done, which ends the action early."""
        try:
            if (await self.slot.call("thread.get", thread_id=self.tid))["state"] == "killed":
                await self.new_thread()
        except WireError:
            pass  # counted by the slot; the next action tries again

    async def new_thread(self) -> None:
        self.tid = (await self.slot.call("thread.create", cwd=str(self.cwd)))["thread_id"]

    async def send(self, text: str, mode: str | None = None, thread_id: str | None = None) -> dict[str, Any]:
        self.n += 1
        tid = thread_id or self.tid
        ack = await self.slot.call("thread.send", thread_id=tid, text=text, mode=mode, client_msg_id=f"d{self.index}-{self.n}")
        self.soak.acked[ack["input_id"]] = tid
        return ack

    async def settle(self, thread_id: str | None = None) -> dict[str, Any]:
        """Wait until the thread has no turn and nothing queued (or is killed)."""
        tid = thread_id or self.tid
        thread: dict[str, Any] = {}
        with trio.move_on_after(SETTLE_S):
            while True:
                thread = await self.slot.call("thread.get", thread_id=tid)
                if thread["state"] == "killed" or (thread["active_turn"] is None and not thread["queued"]):
                    return thread
                await trio.sleep(0.3)  # polling the daemon's state from outside
        self.soak.violation(
            "thread_stuck",
            thread_id=tid,
            state=thread.get("state"),
            active_turn=thread.get("active_turn"),
            queued=thread.get("queued"),
            waited_s=SETTLE_S,
        )
        raise trio.TooSlowError

    async def running(self) -> bool:
        with trio.move_on_after(10):
            while (await self.slot.call("thread.get", thread_id=self.tid))["active_turn"] is None:
                await trio.sleep(0.05)  # polling the daemon's state from outside
            return True
        return False

    # -- actions ----------------------------------------------------------------------------

    async def tools(self) -> None:
        await self.send(scripts.tools_turn(self.n + 1, str(self.cwd)))
        await self.settle()

    async def stream(self) -> None:
        await self.send(scripts.stream_turn(self.n + 1, big=self.rng.random() < 0.2))
        await self.settle()

    async def steer(self) -> None:
        """A slow reply; input queued and steered into it; then an interrupt, or not."""
        await self.send(scripts.slow_turn(self.n + 1))
        await self.running()
        await self.send(f"queued after {self.n}", mode="queue")
        await self.send(f"steered into {self.n}", mode="steer")
        if self.rng.random() < 0.5:
            await self.slot.call("thread.interrupt", thread_id=self.tid, clear_queue=self.rng.random() < 0.3 or None)
        await self.settle()

    async def pause(self) -> None:
        await self.slot.call("thread.pause", thread_id=self.tid)
        await self.send(f"sent while paused {self.n}")
        await self.slot.call("thread.resume", thread_id=self.tid)
        await self.settle()

    async def tool_stop(self) -> None:
        """A command that would run for minutes, stopped by interrupt, pause or kill."""
        marker = f"{self.soak.marker}-{self.index}-{self.n + 1}"
        escape = self.soak.containment in ("cgroup", "pidns") and self.rng.random() < 0.3
        await self.send(scripts.sleeping_tool(self.n + 1, marker, escape))
        started = await self.soak.procs.wait_present(marker, 20)
        how = self.rng.choices(["thread.interrupt", "thread.pause", "thread.kill"], [60, 20, 20])[0]
        result = await self.slot.call(how, thread_id=self.tid)
        stopped = result.get("interrupted") or how == "thread.kill"
        if started and stopped:
            left = await self.soak.procs.wait_gone(marker, GRACE_S)
            if left:
                self.soak.violation("tool_process_survived", how=how, thread_id=self.tid, escaped=escape, processes=left, grace_s=GRACE_S)
        if how == "thread.pause":
            await self.slot.call("thread.resume", thread_id=self.tid)
        await self.settle()
        if how == "thread.kill":
            await self.retire(self.tid)
            await self.new_thread()

    async def agents(self) -> None:
        """Sub-agents that run a command each; the parent waits for them; then they go."""
        before = set((await self.slot.call("thread.get", thread_id=self.tid))["children"])
        await self.send(scripts.agents_turn(self.n + 1, self.rng.randint(1, 3)))
        await self.settle()
        children = [c for c in (await self.slot.call("thread.get", thread_id=self.tid))["children"] if c not in before]
        for child in children:  # killed or deleted: the parent's live children stay few
            await self.settle(child)
            if not await self.retire(child):
                await self.slot.call("thread.kill", thread_id=child)

    async def retire(self, thread_id: str) -> bool:
        """A thread done with: half the time deleted, after its invariants are checked."""
        if self.rng.random() < 0.5:
            return False
        problems = await check_over_wire(self.slot, thread_id)
        if problems:
            self.soak.violation("thread_invariants", thread_id=thread_id, problems=problems[:10])
        await self.slot.call("thread.delete", thread_id=thread_id)
        self.soak.deleted.add(thread_id)
        return True
