"""The MCP servers of the node a client is connected to (``[mcp_servers]`` of its config.toml):
list them, start one again. Each node runs its own servers, so these run where they are asked."""

from __future__ import annotations

from echsd.ops.base import Op, Where, op, param
from echsd.wire.params import NAME

SERVER = {
    "name": "demo",
    "transport": "stdio",
    "target": "python3 server.py",
    "enabled": True,
    "state": "ready",
    "tools": ["echo", "word_count"],
    "last_error": None,
    "restarts": 0,
    "up_since": 1767225600.0,
}
STATES = "`idle` (never needed yet), `starting`, `ready`, `backoff` (down, started again after a delay), `disabled`, `stopped`"


@op(
    "mcp.list",
    Where.HERE,
    result=f"list of `{{name, transport, target, enabled, state, tools, last_error, restarts, up_since}}`; `state`: {STATES}",
    method="mcp_servers",
    example={},
    example_result=[SERVER],
    notes="Enabled servers that never started are started first (each waited for at most its "
    "startup timeout), so that their tools can be listed.",
)
class McpList(Op):
    """The daemon's MCP servers: their state, their tools and their last error."""


@op(
    "mcp.restart",
    Where.HERE,
    result="the server's entry, as `mcp.list` gives it (`starting`)",
    method="mcp_restart",
    positional=("server",),
    example={"server": "demo"},
    example_result={**SERVER, "state": "starting", "tools": ["echo", "word_count"], "restarts": 1, "up_since": None},
    notes="A running session is closed first (calls in flight fail, saying so). A server that "
    "is not configured: `not_found`; a disabled one: `unavailable`.",
)
class McpRestart(Op):
    """Starts an MCP server again now, whatever its state."""

    server: str = param(NAME, "the server's name in `[mcp_servers.NAME]`", required=True)
