"""Sub-agent turn slots: at most ``max_running_subagents`` at once, daemon-wide, shared
fairly between thread trees, and never held by a parent that only waits.

A FIFO limiter let one tree starve every other: a spawn bomb queued thousands of children
ahead of an unrelated thread's one sub-agent, and parents waiting in ``wait_agents`` held
every slot while their children waited for one (a deadlock at the limit). Here:

- a freed slot goes to the waiting tree (a root thread and its descendants) that holds the
  fewest slots, the longest-waiting first among equals; within a tree, first come first
  served;
- a turn that waits for its children lends its slot back (``lent``) and takes one again,
  fairly, when the wait is over.

Sans-IO apart from the trio events waiters sleep on.
"""

from __future__ import annotations

import itertools
from collections import Counter, deque
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import AsyncIterator

import trio


@dataclass(eq=False)
class _Waiter:
    thread_id: str
    tree: str
    arrival: int
    granted: bool = False
    event: trio.Event = field(default_factory=trio.Event)


class SubagentSlots:
    def __init__(self, total: int) -> None:
        self.total = total
        self._held: dict[str, str] = {}  # thread id -> its tree, for each slot given out
        self._per_tree: Counter[str] = Counter()
        self._queues: dict[str, deque[_Waiter]] = {}  # per tree, in arrival order
        self._arrivals = itertools.count()

    @property
    def in_use(self) -> int:
        return len(self._held)

    def free_for(self, tree: str) -> bool:
        """Whether a turn of ``tree`` would get a slot at once."""
        return self.in_use < self.total and not self._queues

    @asynccontextmanager
    async def held(self, thread_id: str, tree: str) -> AsyncIterator[None]:
        """Hold a slot for ``thread_id`` (of ``tree``) for the block."""
        await self._acquire(thread_id, tree)
        try:
            yield
        finally:
            if thread_id in self._held:  # a wait cancelled while lent left it without one
                self._release(thread_id)

    @asynccontextmanager
    async def lent(self, thread_id: str) -> AsyncIterator[None]:
        """Give ``thread_id``'s slot back for the block (if it holds one), then wait for one
        again, fairly. A thread holding none (a root thread) changes nothing."""
        tree = self._held.get(thread_id)
        if tree is None:
            yield
            return
        self._release(thread_id)
        yield  # an error or cancellation leaves without a slot (``held`` then releases none)
        await self._acquire(thread_id, tree)

    async def _acquire(self, thread_id: str, tree: str) -> None:
        await trio.lowlevel.checkpoint_if_cancelled()
        if self.free_for(tree):
            self._grant(thread_id, tree)
            return
        waiter = _Waiter(thread_id, tree, next(self._arrivals))
        self._queues.setdefault(tree, deque()).append(waiter)
        try:
            await waiter.event.wait()
        except BaseException:
            if waiter.granted:
                self._release(thread_id)
            else:
                self._forget(waiter)
            raise

    def _grant(self, thread_id: str, tree: str) -> None:
        if thread_id in self._held:
            raise RuntimeError(f"{thread_id} already holds a sub-agent slot")
        self._held[thread_id] = tree
        self._per_tree[tree] += 1

    def _release(self, thread_id: str) -> None:
        tree = self._held.pop(thread_id)
        self._per_tree[tree] -= 1
        if not self._per_tree[tree]:
            del self._per_tree[tree]
        self._hand_out()

    def _hand_out(self) -> None:
        while self._queues and self.in_use < self.total:
            tree = min(self._queues, key=lambda name: (self._per_tree[name], self._queues[name][0].arrival))
            queue = self._queues[tree]
            waiter = queue.popleft()
            if not queue:
                del self._queues[tree]
            self._grant(waiter.thread_id, waiter.tree)
            waiter.granted = True
            waiter.event.set()

    def _forget(self, waiter: _Waiter) -> None:
        queue = self._queues.get(waiter.tree)
        if queue is None:
            return
        queue.remove(waiter)
        if not queue:
            del self._queues[waiter.tree]
