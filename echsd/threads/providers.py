"""The connections whose tools a thread offers its model (``tool.register``).

Each thread keeps its own: a connection registers specs, they join the thread's tool
registry as ``RemoteTool``s, and when the connection closes they are withdrawn (its pending
calls fail on their own, see ``echsd.tools.remote``). A name the thread already has, from
the daemon or from another connection, is refused.
"""

from __future__ import annotations

from typing import Any

from echsd.errors import Conflict
from echsd.tools.capabilities import Peer
from echsd.tools.registry import ToolRegistry
from echsd.tools.remote import RemoteCalls, RemoteTool, remote_specs


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
        for spec, timeout_s in checked:
            self._tools.put(RemoteTool(spec, peer, self._calls, timeout_s))
        if peer.peer_id not in self._peers:
            self._peers.add(peer.peer_id)
            peer.on_close(lambda: self._withdraw(peer.peer_id))
        return {"thread_id": self.thread_id, "registered": [spec.name for spec, _ in checked]}

    def _withdraw(self, peer_id: int) -> None:
        self._peers.discard(peer_id)
        for tool in self._tools.own():
            if isinstance(tool, RemoteTool) and tool.peer.peer_id == peer_id:
                self._tools.remove(tool.spec.name)
