"""The demo MCP server over streamable HTTP, on trio (hypercorn's trio worker):
``python tests/mcp/servers/http_server.py [--port N] [--token T]``. Prints ``LISTENING <port>``
once it accepts connections; with ``--token`` every request must carry ``Authorization:
Bearer T`` (else 401), and an ``X-Demo`` header is echoed by the ``header`` tool.
"""

from __future__ import annotations

import argparse
from typing import Any

import trio
from hypercorn.config import Config
from hypercorn.trio import serve
from mcp.server.mcpserver import Context

from demo_tools import build


def app_with_token(app: Any, token: str | None) -> Any:
    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and token is not None:
            given = dict(scope["headers"]).get(b"authorization", b"").decode()
            if given != f"Bearer {token}":
                await send({"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]})
                await send({"type": "http.response.body", "body": b"unauthorized"})
                return
        await app(scope, receive, send)

    return guarded


async def main(port: int, token: str | None) -> None:
    server = build("demo-http")

    @server.tool(structured_output=False)
    def header(ctx: Context) -> str:
        """The X-Demo header of the request."""
        headers = ctx.headers or {}
        return str(headers.get("x-demo", ""))

    config = Config()
    config.bind = [f"127.0.0.1:{port}"]
    config.accesslog = None
    config.errorlog = None
    app = app_with_token(server.streamable_http_app(), token)
    async with trio.open_nursery() as nursery:
        binds = await nursery.start(serve, app, config)
        print("LISTENING", binds[0].rsplit(":", 1)[1], flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--token")
    args = parser.parse_args()
    trio.run(main, args.port, args.token)
