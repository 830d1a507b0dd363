"""``echsd serve --mcp tcp://127.0.0.1:PORT``: echsd's MCP tools over streamable HTTP, in the daemon.

The SDK's streamable-HTTP app (an ASGI app, sessions and SSE included) served on trio by
hypercorn's trio worker, at ``/mcp``, behind the same defences as the daemon's other doors
(``check_request``): an ``Origin`` header is refused (no web page may drive the daemon), the
``Host`` must name a loopback address or ``localhost`` unless ``--allow-remote``, and every
request carries the daemon's token as ``Authorization: Bearer`` (read from the token file
each time, so ``echsd token --rotate`` takes effect at once). The tools reach the threads
through the wire protocol over the daemon's own socket, like every other client: this
door holds no thread state and adds no operation.

The socket is bound when the daemon starts (a port in use stops it with one line), and
closed when it stops; connections still open get ``GRACE_S`` to finish.
"""

from __future__ import annotations

import os
import socket
from contextlib import AbstractAsyncContextManager
from functools import partial
from typing import TYPE_CHECKING, Any

import trio

from echsd.errors import EchsError
from echsd.logs import get_logger
from echsd.settings import ListenAddress, Settings
from echsd.wire.handshake import Refusal, check_bearer_door
from echsd.wire.token import TokenError, read_token

if TYPE_CHECKING:
    from echsd.wire.client import Client

log = get_logger(__name__)

PATH = "/mcp"
GRACE_S = 1.0


def check_request(path: str, headers: list[tuple[bytes, bytes]], *, expected_token: str | None, allow_remote: bool) -> Refusal | None:
    """Whether an HTTP request may reach the MCP app (sans-IO)."""
    host = next((value.decode("latin-1") for name, value in headers if name.lower() == b"host"), None)
    how = "Authorization: Bearer <the output of `echsd token`>"
    refusal = check_bearer_door(host, headers, expected_token=expected_token, allow_remote=allow_remote, how=how)
    if refusal is None and path.rstrip("/") != PATH:
        return Refusal(404, f"no such path; the MCP endpoint is {PATH}")
    return refusal


class McpHttpDoor:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.addresses: tuple[ListenAddress, ...] = settings.mcp
        self._sockets: list[socket.socket] = []
        self._stop = trio.Event()

    @property
    def urls(self) -> list[str]:
        return [f"http://{address.host}:{sock.getsockname()[1]}{PATH}" for address, sock in zip(self.addresses, self._sockets)]

    def bind(self) -> None:
        """Bind every ``--mcp`` address now (at start): a port in use fails the start."""
        for address in self.addresses:
            family = socket.AF_INET6 if ":" in (address.host or "") else socket.AF_INET
            sock = socket.socket(family, socket.SOCK_STREAM)
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind((address.host, address.port))
            except OSError as exc:
                sock.close()
                self.close()
                raise EchsError(f"cannot listen for MCP clients on {address}: {exc.strerror or exc}") from None
            self._sockets.append(sock)

    def stop_accepting(self) -> None:
        self._stop.set()

    def close(self) -> None:
        for sock in self._sockets:
            sock.close()
        self._sockets = []

    async def serve(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        if not self._sockets:
            task_status.started()
            return
        from hypercorn.config import Config
        from hypercorn.trio import serve
        from mcp.server.transport_security import TransportSecuritySettings

        from echsd.mcp.door.backend import WireBackend
        from echsd.mcp.door.tools import build_server

        backend = WireBackend(self._connect)
        server = build_server(lambda: backend)
        # Host and Origin are checked by ``check_request`` (which knows --allow-remote).
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
        app = self._guarded(server.streamable_http_app(streamable_http_path=PATH, transport_security=security))
        config = Config()
        # hypercorn closes the sockets it serves: it gets copies, ours are closed by ``close``
        config.bind = [f"fd://{os.dup(sock.fileno())}" for sock in self._sockets]
        config.accesslog = None
        config.errorlog = None
        config.graceful_timeout = GRACE_S
        async with trio.open_nursery() as nursery:
            await nursery.start(partial(serve, app, config, shutdown_trigger=self._stop.wait))
            log.info("listening for MCP clients", urls=self.urls)
            task_status.started()

    def _connect(self) -> AbstractAsyncContextManager[Client]:
        """A wire connection to this daemon, as any client makes one."""
        from echsd.wire.client import connect

        unix = [address for address in self.settings.listen if address.kind == "unix"]
        token = read_token(self.settings.token_path)
        if unix:
            return connect(socket=str(unix[0].path), token=token)
        tcp = self.settings.listen[0]
        return connect(url=f"ws://{tcp.host}:{tcp.port}", token=token)

    def _guarded(self, app: Any) -> Any:
        settings = self.settings

        async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
            if scope["type"] != "http":
                await app(scope, receive, send)  # lifespan: starts the SDK's session manager
                return
            try:
                expected: str | None = await trio.to_thread.run_sync(read_token, settings.token_path)
            except TokenError:
                expected = None
            refusal = check_request(scope["path"], scope["headers"], expected_token=expected, allow_remote=settings.allow_remote)
            if refusal is None:
                await app(scope, receive, send)
                return
            body = (refusal.reason + "\n").encode()
            headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
            if refusal.status == 401:
                headers.append((b"www-authenticate", b'Bearer realm="echsd"'))
            await send({"type": "http.response.start", "status": refusal.status, "headers": headers})
            await send({"type": "http.response.body", "body": body})

        return guarded
