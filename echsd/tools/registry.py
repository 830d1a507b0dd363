"""Which tools exist: the daemon's built-ins, and each thread's registry on top of them.

A thread's ``tools`` config names the tools its model is offered; the names it may list are
those of its registry: the built-ins shared by every thread plus tools added to that thread
at run time (e.g. remote tools a connected client registered). Config validation and the
tool loop both ask the registry, so they can never disagree.

MCP servers' tools (``echsd.mcp``) are offered beside them by the servers a thread's ``mcp``
config names (None: every enabled one), not by its ``tools`` list.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Protocol, Sequence

from echsd.agent_types import SHIPPED, AgentType
from echsd.tools.agents import agent_tools
from echsd.tools.apply_patch import ApplyPatchTool
from echsd.tools.blackboard import BLACKBOARD_TOOLS
from echsd.tools.base import Tool
from echsd.tools.exec_command import ExecCommand
from echsd.tools.grep_files import GrepFiles
from echsd.tools.list_dir import ListDir
from echsd.tools.read_file import ReadFile
from echsd.tools.update_plan import UpdatePlan
from echsd.tools.view_image import ViewImage
from echsd.tools.write_stdin import WriteStdin


def builtin_tools(agent_types: Mapping[str, AgentType] = SHIPPED) -> dict[str, Tool]:
    """Every built-in tool; ``spawn_agent`` offers ``agent_types`` (the shipped ones and config.toml's)."""
    tools: list[Tool] = [
        ExecCommand(), WriteStdin(), ApplyPatchTool(), ReadFile(), ListDir(), GrepFiles(), ViewImage(), UpdatePlan(),
        *agent_tools(agent_types), *BLACKBOARD_TOOLS,
    ]
    return {tool.spec.name: tool for tool in tools}


def default_tool_names(tools: Mapping[str, Tool]) -> tuple[str, ...]:
    return tuple(tools)


class McpToolSource(Protocol):
    """The daemon's MCP servers, as a thread's registry sees them (``echsd.mcp.McpServers``)."""

    def known(self) -> list[str]:
        """Every configured server, enabled or not."""

    def enabled(self) -> list[str]: ...

    async def prepare(self, servers: Sequence[str]) -> None:
        """Before a model request: bounded waits for servers starting, tool lists refreshed."""

    def tools(self, servers: Iterable[str]) -> Sequence[Tool]: ...


class ToolRegistry:
    """One thread's tools: shared built-ins, then the thread's own (which may shadow none),
    then the tools of the MCP servers it uses."""

    def __init__(self, builtins: Mapping[str, Tool], mcp: McpToolSource | None = None) -> None:
        self._builtins = builtins
        self._own: dict[str, Tool] = {}
        self._mcp = mcp

    def get(self, name: str) -> Tool | None:
        found = self._own.get(name) or self._builtins.get(name)
        if found is None and self._mcp is not None and name.startswith("mcp__"):
            found = next((tool for tool in self._mcp.tools(self._mcp.enabled()) if tool.spec.name == name), None)
        return found

    def names(self) -> list[str]:
        return [*self._builtins, *(name for name in self._own if name not in self._builtins)]

    def own(self) -> list[Tool]:
        """The tools added to this thread (offered whatever its ``tools`` config says)."""
        return list(self._own.values())

    def put(self, tool: Tool) -> None:
        """Add (or replace) one of this thread's own tools; a built-in's name is refused."""
        if tool.spec.name in self._builtins:
            raise ValueError(f"{tool.spec.name!r} is a built-in tool")
        self._own[tool.spec.name] = tool

    def remove(self, name: str) -> Tool | None:
        return self._own.pop(name, None)

    def mcp_servers(self, configured: Sequence[str] | None) -> list[str]:
        """The servers a thread's ``mcp`` config means (None: every enabled one)."""
        if self._mcp is None:
            return []
        enabled = self._mcp.enabled()
        return enabled if configured is None else [name for name in configured if name in enabled]

    async def prepare(self, mcp: Sequence[str] | None) -> None:
        """Before a model request: the MCP servers of the thread are up (or given up on,
        within their startup timeouts) and their tool lists are current."""
        servers = self.mcp_servers(mcp)
        if servers and self._mcp is not None:
            await self._mcp.prepare(servers)

    def offered(self, enabled: Iterable[str], mcp: Sequence[str] | None = ()) -> list[Tool]:
        """The model's tool list: the built-ins the config enables, in its order, then the
        thread's own tools, then its MCP servers' tools (``mcp``: the thread's ``mcp``
        config; the default, an empty list, offers none)."""
        found = [self._builtins[name] for name in enabled if name in self._builtins]
        servers = self.mcp_servers(mcp)
        if not servers or self._mcp is None:
            return [*found, *self._own.values()]
        taken = {*self._builtins, *self._own}  # a client's tool named like an MCP one wins (names must be unique)
        return [*found, *self._own.values(), *(tool for tool in self._mcp.tools(servers) if tool.spec.name not in taken)]
