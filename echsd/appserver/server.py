"""The app-server listener: the native wire server's listening machinery over the
``--app-server`` addresses, with its own handshake and one ``Connection`` per client.

Binding, accepting, ``stop_accepting`` and closing are ``WireServer``'s (bind first, right
after the wire's, so a taken address stops the daemon before it touches anything; the unix
socket 0600 in a 0700 directory with a lock file beside it; TCP where the URL says,
loopback unless ``--allow-remote``). What differs is what happens once a client is there.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import trio
from trio_websocket import ConnectionClosed

from echsd.appserver.connection import Connection
from echsd.appserver.context import AppContext
from echsd.appserver.handshake import check_handshake
from echsd.appserver.methods import METHODS
from echsd.appserver.websocket import wrap_server_stream
from echsd.logs import get_logger, register_secret
from echsd.settings import Settings
from echsd.router import ThreadRouter
from echsd.threads.hub import EventHub
from echsd.wire.admission import Admission, Ticket
from echsd.wire.server import CLOSE_TIMEOUT_S, WireServer
from echsd.wire.token import TokenError, read_token

log = get_logger(__name__)


class AppServer(WireServer):
    def __init__(self, settings: Settings, admission: Admission | None = None) -> None:
        """``admission``: the native wire's, so both listeners share the descriptor budget."""
        super().__init__(replace(settings, listen=settings.app_server), admission=admission)
        self.context: AppContext | None = None  # set by serve

    @property
    def urls(self) -> list[str]:
        """Where clients connect: ``unix://PATH`` or ``ws://HOST:PORT`` (ports resolved)."""
        return [url.replace("tcp://", "ws://", 1) for url in super().urls]

    async def serve(self, router: ThreadRouter, hub: EventHub, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:  # type: ignore[override]
        """Accept clients until ``stop_accepting``; connections live until cancelled."""
        self.context = AppContext(router, hub, self.settings, METHODS)
        await super().serve(self.context, task_status=task_status)  # type: ignore[arg-type]

    async def _handshake_and_serve(
        self, context: Any, transport: str, stream: trio.SocketStream, nursery: trio.Nursery, ticket: Ticket
    ) -> None:
        request = None
        with trio.move_on_after(self.settings.tuning.hello_timeout_s):
            request = await wrap_server_stream(nursery, stream, max_message_size=self.settings.tuning.max_message_bytes)
        if request is None:
            return
        expected = await self._token() if transport == "tcp" else None
        # wsproto keeps Host out of ``headers``; trio-websocket has no public accessor.
        host = request._event.host  # noqa: SLF001
        refusal = check_handshake(
            request.path, host, request.headers, transport, expected_token=expected, allow_remote=self.settings.allow_remote
        )
        if refusal is not None:
            log.info("app-server handshake refused", status=refusal.status, reason=refusal.reason, transport=transport)
            await request.reject(refusal.status, body=refusal.reason.encode())
            return
        ws = await request.accept()
        self.admission.authenticated(ticket)  # the handshake authenticated it (token, or the socket's mode)
        await Connection(context, ws, transport).run()
        with trio.move_on_after(CLOSE_TIMEOUT_S):
            try:
                await ws.aclose()
            except ConnectionClosed:
                pass

    async def _token(self) -> str | None:
        """The token file as it is now (a rotation applies to new connections)."""
        try:
            token = await trio.to_thread.run_sync(read_token, self.settings.token_path)
        except TokenError as exc:
            log.error("cannot check an app-server client's token", error=str(exc))
            return None
        register_secret(token)
        return token
