"""``ThreadRouter``: the one place that decides where an op runs.

Every door (the native wire, the app-server listener, the sub-agent tools, a forwarded
request from another node) hands the router an op value; nothing else asks "is this thread
here?". From the op's ``route()``:

- ``OwnerOf(thread)``: here, if this node runs the thread (its worker, or a node handler
  such as ``thread.create {parent}``); a given-up thread is killed without its worker and
  refuses anything else (``unavailable``); a thread another node runs is forwarded there
  (``RemoteNodes``); an unknown one is ``not_found``.
- ``AtNode(node)``: here, or forwarded to that node (refused if it is unknown or silent).
- ``EVERYWHERE``: here and on every other live node, the answers merged (``op.merge``).
- ``ANYWHERE``: here first; where this node does not hold it (``not_found``), the others.
- ``HERE``: on this node (reads that see every node's threads in the store, and walks
  such as a tree kill, whose steps are ops routed one by one).

A forwarded op runs with ``run_here(op, forwarded=True)`` on the target: its own part only,
and ``unavailable`` if the thread moved meanwhile (the origin's client retries).
"""

from __future__ import annotations

from typing import Any

from echsd.errors import Internal, NotFound, Unavailable
from echsd.ids import is_thread_id
from echsd.ops.base import ANYWHERE, EVERYWHERE, AtNode, Op, OwnerOf
from echsd.ops.internal import KillOne
from echsd.router.handlers import NODE
from echsd.router.node import LocalNode, RemoteNodes
from echsd.threads.handlers import in_thread


class ThreadRouter:
    def __init__(self, node_id: str, remote: RemoteNodes | None = None) -> None:
        self.node_id = node_id
        self.remote = remote
        self._local: LocalNode | None = None

    def attach(self, local: LocalNode) -> None:
        """The node's parts, once built (they need the router themselves: the composition's one
        late step). Until then every op is ``unavailable``."""
        self._local = local

    @property
    def local(self) -> LocalNode:
        if self._local is None:
            raise Unavailable("the daemon is starting")
        return self._local

    async def run(self, op: Op) -> Any:
        """Run ``op`` where it belongs and return its answer (or raise its error)."""
        route = op.route()
        if isinstance(route, OwnerOf):
            return await self._at_owner(route.thread_id, op)
        if isinstance(route, AtNode):
            if route.node is None or route.node == self.node_id or self.remote is None:
                return await self.run_here(op)
            return await self.remote.forward(route.node, op.for_forwarding(), check_node=True)
        if route is EVERYWHERE:
            parts = [await self.run_here(op)]
            if self.remote is not None:
                parts += await self.remote.ask_others(op.for_forwarding())
            return op.merge(parts, self.local.page_bytes)
        if route is ANYWHERE:
            try:
                return await self.run_here(op)
            except NotFound:
                if self.remote is None:
                    raise
                answers = await self.remote.ask_others(op.for_forwarding())
                if not answers:
                    raise
                return answers[0]
        return await self.run_here(op)

    async def _at_owner(self, thread_id: str, op: Op) -> Any:
        if self.remote is None or not is_thread_id(thread_id) or self.local.supervisor.local(thread_id) is not None:
            return await self.run_here(op)
        owner = await self.remote.owner_of(thread_id)
        return await self.remote.forward(owner, op.for_forwarding())

    async def run_here(self, op: Op, *, forwarded: bool = False) -> Any:
        """This node's part of ``op``: a node handler, or the thread's worker."""
        local = self.local
        route = op.route()
        thread_id = route.thread_id if isinstance(route, OwnerOf) else None
        if forwarded and thread_id is not None and local.supervisor.local(thread_id) is None:
            raise Unavailable(f"thread {thread_id} is not run by node {self.node_id} any more; try again")
        handler = NODE.get(type(op))
        if handler is not None:
            return await handler(local, op)
        if thread_id is None or not in_thread(type(op)):
            raise Internal(f"nothing on this node answers {op.op_name}")
        record = local.supervisor.record(thread_id)
        if record.failed is not None and isinstance(op, KillOne):
            return await local.supervisor.kill_offline(record, op.reason)  # a given-up thread can still be stopped
        return await local.supervisor.call(record, op)
