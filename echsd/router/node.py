"""``LocalNode``: what the router's node handlers may use on the node they run on."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from echsd.blackboard.service import BlackboardService
from echsd.errors import NotFound
from echsd.mcp.servers import McpServers
from echsd.ops.base import Op
from echsd.settings import Settings
from echsd.store import Store
from echsd.threads.services import OpRunner
from echsd.threads.supervisor import Supervisor


class RemoteNodes(Protocol):
    """The other daemons sharing the store (``echsd.cluster.ClusterNode``)."""

    node_id: str

    async def owner_of(self, thread_id: str) -> str:
        """The node that runs ``thread_id`` (NotFound; Unavailable while this node takes it over)."""

    async def forward(self, node: str, op: Op, *, check_node: bool = False) -> Any:
        """Run ``op`` on ``node`` (``check_node``: refuse an unknown or silent node first)."""

    async def ask_others(self, op: Op) -> list[Any]:
        """``op`` on every other live node: the answers of those that had one."""

    async def epoch_of(self, node: str) -> int:
        """The lease epoch of a live node (NotFound, or Unavailable if its lease expired)."""

    async def nodes(self) -> list[dict[str, Any]]: ...


class WebLogins(Protocol):
    """The node's web view listener (``echsd.web.WebDoor``): its logins."""

    def login(self) -> dict[str, Any]:
        """A one-time login link: ``{url, expires_in_s}``."""

    def revoke(self) -> dict[str, int]:
        """End every session and unused code: ``{sessions, codes}``."""


@dataclass
class LocalNode:
    supervisor: Supervisor
    store: Store
    settings: Settings
    boards: BlackboardService
    router: OpRunner  # the router, for the ops a handler's walk is made of
    remote: RemoteNodes | None = None
    mcp: McpServers | None = None  # the daemon's MCP servers (their counts in ``status``)
    web: WebLogins | None = None  # the web view's listener (--web), for ``echs web``
    started: float = field(default_factory=time.monotonic)

    @property
    def node_id(self) -> str:
        return self.supervisor.node_id

    @property
    def shared(self) -> bool:
        """Whether other nodes run threads of this store (reads then include theirs)."""
        return self.remote is not None

    @property
    def page_bytes(self) -> int:
        """What one page may hold: half the frame limit, leaving room for the envelope."""
        return self.settings.tuning.max_message_bytes // 2

    async def placement(self, node: str | None) -> tuple[str, int] | None:
        """(node, its lease epoch) to create a thread for another node; None for this one."""
        if node is None or node == self.node_id:
            return None
        if self.remote is None:
            raise NotFound(f"no node {node!r}: this daemon ({self.node_id}) runs alone")
        return node, await self.remote.epoch_of(node)
