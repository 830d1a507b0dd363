"""``mcpServerStatus/list``: the daemon's MCP servers as the Codex TUI's ``/mcp`` shows them.

Each server of ``[mcp_servers]`` in the shape of the protocol's ``McpServerStatus``: its
tools by their own names (with their schemas, as the server listed them), what it said of
itself, how it stands (``notStarted``, ``starting``, ``connected``, ``failed``,
``disabled``) and, when it has no tools to show, why. Enabled servers that never started
are started first, each waited for at most its startup timeout, as Codex does to list
them. echsd reads no MCP resources, so ``resources`` and ``resourceTemplates`` are empty.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from echsd.appserver.framing import INVALID_REQUEST, Request, RpcError

if TYPE_CHECKING:
    from echsd.appserver.connection import Connection
    from echsd.mcp.session import McpSession

RUNTIME = {"idle": "notStarted", "starting": "starting", "ready": "connected", "backoff": "failed", "stopped": "failed", "disabled": "disabled"}
PAGE = 100


def _origin(url: str | None) -> str | None:
    if url is None:
        return None
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")


def server_status(session: McpSession) -> dict[str, Any]:
    config = session.config
    return {
        "name": session.name,
        "authStatus": "bearerToken" if config.bearer_token_env_var else "unsupported",
        "httpOrigin": _origin(config.url),
        "pluginId": None,
        "runtimeStatus": RUNTIME.get(session.state, "failed"),
        "serverInfo": session.server_info,
        "serverCapabilities": session.capabilities,
        "tools": {tool.name: tool.model_dump(by_alias=True, exclude_none=True) for tool in session.tools},
        "toolListMeta": None,
        "toolsError": session.last_error if not session.tools else None,
        "resources": [],
        "resourceTemplates": [],
    }


async def mcp_server_status_list(conn: Connection, request: Request) -> dict[str, Any]:
    params = request.params
    mcp = conn.router.local.mcp  # this node's MCP servers
    name = params.get("serverName")
    if name is not None and (mcp is None or name not in mcp.sessions):
        raise RpcError(INVALID_REQUEST, f"no MCP server {name!r} in the daemon's config.toml")
    sessions = await mcp.listed([name] if name is not None else None) if mcp is not None else []
    cursor = params.get("cursor")
    start = int(cursor) if isinstance(cursor, str) and cursor.isdigit() else 0
    limit = params.get("limit")
    size = limit if isinstance(limit, int) and 0 < limit <= PAGE else PAGE
    page = sessions[start : start + size]
    following = start + size if start + size < len(sessions) else None
    return {"data": [server_status(session) for session in page], "nextCursor": str(following) if following is not None else None}
