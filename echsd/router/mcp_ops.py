"""Node handlers of ``mcp.list`` and ``mcp.restart``: this node's MCP servers."""

from __future__ import annotations

from typing import Any

from echsd.errors import NotFound
from echsd.ops.mcp import McpList, McpRestart
from echsd.router.handlers import answers
from echsd.router.node import LocalNode


@answers(McpList)
async def mcp_list(node: LocalNode, op: McpList) -> list[dict[str, Any]]:
    if node.mcp is None:
        return []
    return [session.status() for session in await node.mcp.listed()]


@answers(McpRestart)
async def mcp_restart(node: LocalNode, op: McpRestart) -> dict[str, Any]:
    if node.mcp is None:
        raise NotFound(f"no MCP server {op.server!r}: none is configured ([mcp_servers.NAME] in config.toml)")
    return node.mcp.restart(op.server)
