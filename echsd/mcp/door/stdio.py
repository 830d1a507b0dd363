"""``echsd mcp``: echsd's MCP tools over stdio, for an MCP client that starts it as a command.

The process is a client of the running daemon (found as ``echs`` finds it: ``--state-dir``,
``--socket``/``--url``, ``--token-file`` and their environment variables). stdout carries
the MCP messages only; logs go to stderr. It never starts a daemon: a call made while none
runs is answered with an error saying so, and works again once one does.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from functools import partial
from typing import TYPE_CHECKING, Any

from echsd.mcp.door.backend import WireBackend
from echsd.mcp.door.tools import build_server

if TYPE_CHECKING:
    from echsd.wire.client import Client


async def serve_stdio(connection: dict[str, Any]) -> None:
    """Serve until the MCP client closes stdin; ``connection``: ``echsd.wire.client.connect``'s
    keyword arguments."""
    from echsd.wire.client import connect

    opener: Any = partial(connect, **connection)

    def open_client() -> AbstractAsyncContextManager[Client]:
        return opener()

    backend = WireBackend(open_client)
    await build_server(lambda: backend).run_stdio_async()
