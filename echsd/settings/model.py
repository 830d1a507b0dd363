"""``Settings``: the daemon's validated configuration, one frozen value."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from echsd.agent_types import AgentType
from echsd.approval_rules import ApprovalSettings
from echsd.hooks.config import HooksConfig
from echsd.settings.addresses import ListenAddress
from echsd.settings.tuning import Tuning
from echsd.tools.envpolicy import EnvPolicy

if TYPE_CHECKING:
    from echsd.codex.catalog import ModelCatalog
    from echsd.codex.endpoint import Endpoint
    from echsd.mcp.config import McpServerConfig


@dataclass(frozen=True)
class Settings:
    state_dir: Path
    listen: tuple[ListenAddress, ...]
    provider: str  # resolved: openai | codex | mock
    provider_requested: str  # as given: auto | openai | codex | mock
    base_url: str | None  # None for mock until the in-process mock is listening
    model: str
    allow_remote: bool
    codex_home: Path
    user_agents_md: Path | None = None  # the user's own AGENTS.md, sent before the projects' (if it exists)
    openai_api_key: str | None = field(repr=False, default=None)
    openai_organization: str | None = None  # OPENAI_ORGANIZATION: the OpenAI-Organization header
    openai_project: str | None = None  # OPENAI_PROJECT: the OpenAI-Project header
    app_server: tuple[ListenAddress, ...] = ()  # --app-server: Codex app-server protocol listeners
    mcp: tuple[ListenAddress, ...] = ()  # --mcp: echsd's MCP tools over streamable HTTP
    web: ListenAddress | None = None  # --web: the web view (and /metrics)
    metrics: ListenAddress | None = None  # --metrics: /metrics alone
    store_url: str = field(repr=False, default="")  # sqlite:////abs/path or postgresql://...
    node_id: str = ""
    warnings: tuple[str, ...] = ()  # said once at start (e.g. a password on the command line)
    # The file's tables (``sections.SECTIONS``):
    tuning: Tuning = field(default_factory=Tuning)
    catalog: ModelCatalog = field(default=None, repr=False, compare=False)  # type: ignore[assignment]
    agent_types: dict[str, AgentType] = field(default_factory=dict, repr=False, compare=False)
    mcp_servers: dict[str, McpServerConfig] = field(default_factory=dict, repr=False, compare=False)
    env_policy: EnvPolicy = field(default_factory=EnvPolicy)  # [tools]: the environment tool commands see
    sandbox_mode: str = "workspace-write"  # new threads' sandbox (settings/sandbox.py)
    sandbox_network: str | None = None  # new threads' network; None: off, but on under full-access
    writable_roots: tuple[str, ...] = ()  # new threads' writable roots
    sandbox_fallback: str = "refuse"  # or "unconfined": run what the kernel cannot confine anyway
    sandbox_disable: tuple[str, ...] = ()  # mechanisms not to use (landlock, userns, seccomp)
    approval: ApprovalSettings = field(default_factory=ApprovalSettings)  # [approval]: rules, on_timeout
    hooks: HooksConfig = field(default_factory=HooksConfig, repr=False)  # [hooks]: programs and URLs told of events
    worktree_root_setting: Path | None = None  # worktree_root: where threads' git worktrees go

    @property
    def worktree_root(self) -> Path:
        """Where threads' worktrees are made (``worktree_root``, default ``<state>/worktrees``)."""
        return self.worktree_root_setting or self.state_dir / "worktrees"

    @property
    def db_path(self) -> Path:
        """The default SQLite file (the store is ``store_url``)."""
        return self.state_dir / "echsd.db"

    @property
    def token_path(self) -> Path:
        return self.state_dir / "token"

    @property
    def socket_path(self) -> Path:
        return self.state_dir / "echsd.sock"

    @property
    def config_path(self) -> Path:
        return self.state_dir / "config.toml"

    def endpoint(self, base_url: str | None = None, unix_socket: str | None = None) -> Endpoint:
        """The provider's endpoint; ``base_url`` overrides the URL (the in-process mock's,
        reached through ``unix_socket``)."""
        from echsd.codex.endpoint import make_endpoint  # the codex package only where a client is made

        return make_endpoint(
            self.provider,
            base_url or self.base_url,
            codex_home=self.codex_home,
            api_key=self.openai_api_key,
            organization=self.openai_organization,
            project=self.openai_project,
            unix_socket=unix_socket,
        )
