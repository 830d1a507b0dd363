"""What every thread actor gets from the daemon, typed: no ``Any`` seams, no patching later.

The supervisor builds ``ActorServices`` with itself as the ``ThreadTree`` (the one authority
over which threads exist here and who their parents are), its turn-finished callback, and
the router (``ops``): what an actor asks of other threads (a sub-agent's send, a kill, a
note to a parent) is an op, run wherever that thread runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Callable, Collection, Mapping, Protocol

import trio

from echsd.agent_types import AgentType
from echsd.approval_rules import ApprovalSettings
from echsd.blackboard.board import Blackboard
from echsd.codex import ModelCatalog, ResponsesClient
from echsd.settings import Tuning
from echsd.store import Store, Unit
from echsd.threads.account import AccountLimits
from echsd.threads.approvals import ApprovalBook
from echsd.threads.config import ConfigRules, SandboxRules, ThreadConfig
from echsd.threads.context import TurnContext, gather
from echsd.threads.effects import TurnEnd
from echsd.ops.base import Op
from echsd.threads.record import ThreadRecord
from echsd.threads.slots import SubagentSlots
from echsd.threads.workspaces import Workspaces
from echsd.tools.base import Tool
from echsd.tools.registry import McpToolSource
from echsd.tools.remote import RemoteCalls


class OpRunner(Protocol):
    """The router: runs an op wherever it belongs (``echsd.router.ThreadRouter``)."""

    async def run(self, op: Op) -> Any: ...


class ThreadTree(Protocol):
    """The supervisor, as actors (and their sub-agents API) use it."""

    def build_config(self, params: Mapping[str, Any]) -> ThreadConfig:
        """A new thread's config from ``thread.create`` params (``BadRequest`` if invalid)."""

    def check_room_for_child(self, parent_id: str) -> None:
        """Refuse a child beyond the depth or children limits."""

    def register_thread(
        self,
        config: ThreadConfig,
        parent: str | None,
        extra: dict[str, Any] | None = None,
        placed: tuple[str, int] | None = None,
        thread_id: str | None = None,
    ) -> tuple[ThreadRecord, Unit]:
        """Create and register a thread now (sync; the writer has room): its record and the
        unit announcing it (``thread.created``); ``placed``: (node, its lease epoch) to run
        it on another node (handed over once the unit committed, by the router);
        ``thread_id``: the id chosen already (its worktree was made for it)."""

    def record(self, thread_id: Any) -> ThreadRecord:
        """This node's record of a thread (``NotFound`` for one run elsewhere)."""

    def on_turn_finished(self, listener: Callable[[str, TurnEnd | None], None]) -> Callable[[], None]:
        """``listener(thread_id, end)`` after each turn's end (``end`` None: killed while idle)."""


@dataclass(frozen=True)
class ActorServices:
    store: Store
    client: ResponsesClient
    builtins: Mapping[str, Tool]
    tuning: Tuning
    tree: ThreadTree
    ops: OpRunner
    turn_finished: Callable[[str, TurnEnd | None], None]
    wake_waiters: Callable[[str], None]  # a thread's turn ended elsewhere: wake who waits on it here
    approvals: ApprovalBook
    catalog: ModelCatalog
    limits: AccountLimits
    remote_calls: RemoteCalls
    agent_types: Mapping[str, AgentType]
    subagent_slots: SubagentSlots  # sub-agent turns running at once, daemon-wide, fair between trees
    blackboard: Blackboard  # the daemon's one blackboard; each thread writes in its own name
    workspaces: Workspaces  # git: worktrees, turn snapshots, merges
    mcp: McpToolSource | None = None  # the daemon's MCP servers (config.toml's [mcp_servers])
    sandbox_rules: SandboxRules = SandboxRules()  # new threads' sandbox defaults, what cannot be enforced
    approval: ApprovalSettings = ApprovalSettings()  # [approval]: every thread's rules, what a timeout does
    user_agents_md: Path | None = None  # the user's own AGENTS.md (sent first, when it exists)

    async def turn_context(self, config: ThreadConfig) -> TurnContext:
        """What the model is told of where the thread works (reads files: off the event loop)."""
        tuning = self.tuning
        wanted = "off ([tuning] project_docs)" if not tuning.project_docs else "on" if config.project_docs else "off (the thread's project_docs)"
        gathering = partial(gather, config.to_dict(), docs_wanted=wanted, user_doc=self.user_agents_md, max_bytes=tuning.project_doc_max_bytes)
        return await trio.to_thread.run_sync(gathering)

    def config_rules(self, known_tools: Collection[str]) -> ConfigRules:
        """What a thread's config is checked against: its tools, the catalog, the MCP servers, the sandbox."""
        servers = self.mcp.known() if self.mcp is not None else []
        enabled = self.mcp.enabled() if self.mcp is not None else []
        return ConfigRules(
            known_tools=known_tools,
            catalog=self.catalog,
            stores_responses=self.client.endpoint.stores_responses,
            mcp_servers=servers,
            mcp_enabled=enabled,
            sandbox=self.sandbox_rules,
        )
