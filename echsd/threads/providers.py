"""The connections whose tools a thread offers its model (``tool.register``).

Each thread keeps its own: a connection registers specs, they join the thread's tool
registry as ``RemoteTool``s, and when the connection closes they are withdrawn (its pending
calls fail on their own, see ``echsd.tools.remote``). A name the thread already has, from
the daemon or from another connection, is refused, and so is a registration that would
take the thread past ``MAX_THREAD_TOOLS`` remote tools or ``MAX_THREAD_TOOL_BYTES`` of
their definitions (each model request carries them all).
"""

from __future__ import annotations

from typing import Any

from echsd.errors import BadRequest, Conflict
from echsd.tools.base import ToolSpec
from echsd.tools.capabilities import Peer
from echsd.tools.registry import ToolRegistry
from echsd.tools.remote import MAX_THREAD_TOOL_BYTES, MAX_THREAD_TOOLS, RemoteCalls, RemoteTool, remote_specs, spec_size


class RemoteProviders:
    def __init__(self, thread_id: str, tools: ToolRegistry, calls: RemoteCalls) -> None:
        self.thread_id = thread_id
        self._tools = tools
        self._calls = calls
        self._peers: set[int] = set()

    def register(self, specs: Any, peer: Peer) -> dict[str, Any]:
        checked = remote_specs(specs)
        for spec, _timeout in checked:
            existing = self._tools.get(spec.name)
            if existing is not None and not (isinstance(existing, RemoteTool) and existing.peer.peer_id == peer.peer_id):
                owner = "another client" if isinstance(existing, RemoteTool) else "the daemon (a built-in)"
                raise Conflict(f"thread {self.thread_id} has a tool named {spec.name!r} already, provided by {owner}")
        self._check_room([spec for spec, _ in checked])
        for spec, timeout_s in checked:
            self._tools.put(RemoteTool(spec, peer, self._calls, timeout_s))
        if peer.peer_id not in self._peers:
            self._peers.add(peer.peer_id)
            peer.on_close(lambda: self._withdraw(peer.peer_id))
        return {"thread_id": self.thread_id, "registered": [spec.name for spec, _ in checked]}

    def _check_room(self, new: list[ToolSpec]) -> None:
        """The thread's remote tools after this registration (a name registered again by
        its client replaces its old spec) stay within the per-thread limits."""
        replaced = {spec.name for spec in new}
        kept = [tool.spec for tool in self._tools.own() if isinstance(tool, RemoteTool) and tool.spec.name not in replaced]
        count = len(kept) + len(new)
        if count > MAX_THREAD_TOOLS:
            raise BadRequest(
                f"thread {self.thread_id} would offer {count} remote tools, more than the limit of {MAX_THREAD_TOOLS} "
                "(from every client together); nothing was registered"
            )
        size = sum(spec_size(spec) for spec in (*kept, *new))
        if size > MAX_THREAD_TOOL_BYTES:
            raise BadRequest(
                f"thread {self.thread_id}'s remote tool definitions would be {size:,} bytes, more than the limit of "
                f"{MAX_THREAD_TOOL_BYTES:,} (every model request carries them); nothing was registered"
            )

    def _withdraw(self, peer_id: int) -> None:
        self._peers.discard(peer_id)
        for tool in self._tools.own():
            if isinstance(tool, RemoteTool) and tool.peer.peer_id == peer_id:
                self._tools.remove(tool.spec.name)
