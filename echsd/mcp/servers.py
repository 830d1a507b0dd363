"""The daemon's MCP servers: one supervised session each, shared by every thread that uses it.

``McpServers`` is created with the daemon's ``[mcp_servers]`` config and runs as a child of
the daemon's root nursery: a server starts when a thread first needs it (``required``
ones with the daemon), and stops, with its process, when the daemon stops. Threads see the
servers through ``McpToolSource`` (the tools of the servers a thread uses, named
``mcp__<server>__<tool>``, unique across all servers) and ``prepare`` before each model
request (bounded waits, ``session.py``).

The SDK takes about a second to import, so it is imported only when servers are configured:
a daemon without any starts as fast as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import trio

from echsd.errors import NotFound, Unavailable
from echsd.logs import get_logger
from echsd.mcp import names
from echsd.mcp.config import McpServerConfig

if TYPE_CHECKING:
    from echsd.mcp.session import McpSession
    from echsd.mcp.transport import Confine
    from echsd.mcp.tool import McpTool

log = get_logger(__name__)


class McpServers:
    def __init__(self, configs: Mapping[str, McpServerConfig], cwd: str, confine: Confine | None = None) -> None:
        """``confine``: the sandbox a stdio server runs in (None: its own enclosure only)."""
        self.sessions: dict[str, McpSession] = {}
        if configs:
            from echsd.mcp.session import McpSession

            self.sessions = {name: McpSession(config, cwd, confine) for name, config in sorted(configs.items())}
        self._nursery: trio.Nursery | None = None
        self._by_server: dict[str, list[McpTool]] = {}
        self._versions: tuple[int, ...] = ()

    # ---- lifetime ----------------------------------------------------------------------------

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            for session in self.sessions.values():
                if session.config.required:
                    session.start(nursery)
                if session.config.ignored:
                    log.warning("mcp server settings ignored by echsd", server=session.name, keys=list(session.config.ignored))
            task_status.started()
            try:
                await trio.sleep_forever()
            finally:
                self._nursery = None

    def _start(self, session: McpSession) -> None:
        from echsd.mcp.session import ServerDown

        if self._nursery is None:
            raise ServerDown("the daemon is stopping: no MCP server starts")
        session.start(self._nursery)

    # ---- what the daemon's clients ask -------------------------------------------------------

    def enabled(self) -> list[str]:
        return [name for name, session in self.sessions.items() if session.config.enabled]

    def status(self) -> list[dict[str, Any]]:
        return [session.status() for session in self.sessions.values()]

    def counts(self) -> dict[str, int]:
        """For ``echs status``: servers up, down (failing), and the rest (idle, disabled)."""
        states = [session.state for session in self.sessions.values()]
        up = states.count("ready")
        down = sum(1 for state in states if state in ("backoff", "stopped"))
        return {"total": len(states), "up": up, "down": down, "starting": states.count("starting")}

    async def listed(self, names: Sequence[str] | None = None) -> list[McpSession]:
        """The sessions of these servers (all), after starting the enabled ones that never
        ran (each waited for at most its startup timeout): a listing shows their tools."""
        chosen = [session for name, session in self.sessions.items() if names is None or name in names]
        await self.prepare([session.name for session in chosen])
        return chosen

    def restart(self, name: str) -> dict[str, Any]:
        session = self.sessions.get(name)
        if session is None:
            known = ", ".join(self.sessions) or "none configured"
            raise NotFound(f"no MCP server {name!r} (known: {known})")
        if self._nursery is None:
            raise Unavailable("the daemon is stopping")
        from echsd.mcp.session import ServerDown

        try:
            session.restart(self._nursery)
        except ServerDown as exc:
            raise Unavailable(str(exc)) from None
        return session.status()

    # ---- what threads ask (``McpToolSource``) --------------------------------------------------

    def known(self) -> list[str]:
        return list(self.sessions)

    async def prepare(self, servers: Sequence[str]) -> None:
        """Before a model request: start the servers never started, wait (each at most its
        startup timeout, all at once) for those starting, list again those whose tools changed."""
        wanted = [self.sessions[name] for name in servers if name in self.sessions and self.sessions[name].config.enabled]
        if not wanted or self._nursery is None:
            return
        for session in wanted:
            session.start(self._nursery)
        if len(wanted) == 1:
            await wanted[0].refresh()
            return
        async with trio.open_nursery() as nursery:
            for session in wanted:
                nursery.start_soon(session.refresh)

    def tools(self, servers: Iterable[str]) -> list[McpTool]:
        """The tools of these servers as the model is offered them (in server order)."""
        self._adapt()
        chosen = set(servers)
        return [tool for name, tools in self._by_server.items() if name in chosen for tool in tools]

    def _adapt(self) -> None:
        """(Re)build the adapted tools when any server's list changed; names are unique
        across every server's tools, resolved in a fixed order."""
        versions = tuple(session.tools_version for session in self.sessions.values())
        if versions == self._versions:
            return
        from echsd.mcp.tool import McpTool, tool_spec

        self._versions = versions
        taken: set[str] = set()
        self._by_server = {}
        for name, session in self.sessions.items():
            model_names = names.model_names(name, [tool.name for tool in session.tools], taken)
            adapted = []
            for tool in session.tools:
                spec = tool_spec(model_names[tool.name], name, tool, session.config.parallel)
                if spec is None:
                    log.warning("mcp tool not offered: its input schema is too large", server=name, tool=tool.name)
                    continue
                taken.add(spec.name)
                adapted.append(McpTool(spec, session, tool.name, self._start))
            self._by_server[name] = adapted
