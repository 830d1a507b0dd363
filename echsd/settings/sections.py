"""The config file's tables that only the file sets (no flag, no environment variable).

Adding one is a local edit: a parser ``(value or None, config path) -> value`` (in its own
module when it is more than a few lines), a field on ``Settings`` with its default, and one
``Section`` line below. ``load_settings`` refuses unknown top-level keys and fills each field.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from echsd.agent_types import AgentTypeError, load_agent_types
from echsd.settings.approval import approval_settings_from
from echsd.settings.errors import SettingsError
from echsd.settings.sandbox import disable_from, fallback_from, mode_from, network_from, writable_roots_from
from echsd.settings.tuning import tuning_from
from echsd.tools.envpolicy import env_policy_from


@dataclass(frozen=True)
class Section:
    key: str  # the config file's top-level key
    field: str  # the ``Settings`` field it fills
    parse: Callable[[Any, Path], Any]  # (the file's value, None when absent; the file) -> value


def agent_types_from(table: Any, path: Path) -> Any:
    """``[agent_types.NAME]``: the sub-agent types, the shipped ones overridden or extended."""
    try:
        return load_agent_types(table, str(path))
    except AgentTypeError as exc:
        raise SettingsError(str(exc)) from None


def catalog_from(table: Any, path: Path) -> Any:
    """The shipped model catalog with the config file's ``[models."NAME"]`` tables merged in
    (the codex package is imported only here: the thin client reads settings too)."""
    from echsd.codex.catalog import CatalogError, load_catalog

    try:
        return load_catalog(table, where=str(path))
    except CatalogError as exc:
        raise SettingsError(f"invalid setting in {exc}") from None


def mcp_servers_from(table: Any, path: Path) -> Any:
    """``[mcp_servers.NAME]``: the MCP servers whose tools threads may use."""
    from echsd.mcp.config import McpConfigError, load_mcp_servers

    try:
        return load_mcp_servers(table, str(path))
    except McpConfigError as exc:
        raise SettingsError(str(exc)) from None


def hooks_from(table: Any, path: Path) -> Any:
    """``[hooks]``: a program to run and URLs to post to when something happens."""
    from echsd.hooks.config import HooksConfigError, load_hooks

    try:
        return load_hooks(table, str(path))
    except HooksConfigError as exc:
        raise SettingsError(str(exc)) from None


def tools_from(table: Any, path: Path) -> Any:
    """``[tools]``: which environment variables tool commands see (``env_exclude``, ``env_include``)."""
    try:
        return env_policy_from(table, str(path))
    except ValueError as exc:
        raise SettingsError(str(exc)) from None


def worktree_root_from(value: Any, path: Path) -> Path | None:
    """``worktree_root``: the directory threads' git worktrees are made in (absolute, ``~`` allowed)."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or not Path(value).expanduser().is_absolute():
        raise SettingsError(f"invalid setting 'worktree_root' in {path}: expected an absolute path (got {value!r})")
    return Path(value).expanduser()


SECTIONS: tuple[Section, ...] = (
    Section("tuning", "tuning", tuning_from),
    Section("models", "catalog", catalog_from),
    Section("agent_types", "agent_types", agent_types_from),
    Section("mcp_servers", "mcp_servers", mcp_servers_from),
    Section("tools", "env_policy", tools_from),
    Section("sandbox", "sandbox_mode", mode_from),
    Section("network", "sandbox_network", network_from),
    Section("writable_roots", "writable_roots", writable_roots_from),
    Section("sandbox_fallback", "sandbox_fallback", fallback_from),
    Section("sandbox_disable", "sandbox_disable", disable_from),
    Section("approval", "approval", approval_settings_from),
    Section("hooks", "hooks", hooks_from),
    Section("worktree_root", "worktree_root_setting", worktree_root_from),
)


def check_sections(tables: dict[str, Any], path: Path) -> None:
    """What one table says of another: an agent type names only configured MCP servers."""
    for agent in tables["agent_types"].values():
        unknown = sorted(set(agent.mcp_servers or ()) - set(tables["mcp_servers"]))
        if unknown:
            raise SettingsError(f"invalid setting 'agent_types.{agent.name}.mcp_servers' in {path}: no [mcp_servers.{unknown[0]}] table")
