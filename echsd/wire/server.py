"""The WebSocket server: listeners, the opening handshake, one ``Session`` per connection.

Two phases, so a second daemon on the same state dir refuses to start before it touches
anything: ``bind`` claims the addresses (first thing at start-up), ``serve`` accepts
connections once the thread service exists. At shutdown ``stop_accepting`` comes first;
open connections keep receiving events (e.g. the ``turn.interrupted`` of the shutdown)
until the daemon's root nursery is cancelled.

trio-websocket's ``serve_websocket`` is TCP-only, so each listener runs under
``trio.serve_listeners`` and every accepted stream is wrapped with ``wrap_server_stream``.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import trio
from trio_websocket import ConnectionClosed, wrap_server_stream

from echsd.logs import get_logger
from echsd.settings import Settings
from echsd.wire.handshake import check_handshake
from echsd.wire.listeners import Bound, bind
from echsd.wire.session import Session, WireContext

log = get_logger(__name__)

HANDSHAKE_TIMEOUT_S = 10.0
CLOSE_TIMEOUT_S = 2.0
RECEIVE_BUFFER = 65536


class WireServer:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.bound: list[Bound] = []
        self._accepting = trio.CancelScope()

    @property
    def urls(self) -> list[str]:
        """Where clients can connect (``unix://PATH``, ``tcp://HOST:PORT``; ports resolved)."""
        return [b.url for b in self.bound]

    async def bind(self) -> None:
        """Claim every ``--listen`` address; raises ``ListenError`` (an ``Unavailable``)."""
        try:
            for address in self.settings.listen:
                self.bound.extend(await bind(address, self.settings.state_dir))
        except BaseException:
            self.close()
            raise

    async def serve(self, context: WireContext, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Accept connections until ``stop_accepting``; sessions live until cancelled."""
        try:
            async with trio.open_nursery() as sessions:
                with self._accepting:
                    async with trio.open_nursery() as accepting:
                        for bound in self.bound:
                            handler = partial(self._handle, context, bound.transport)
                            accepting.start_soon(partial(trio.serve_listeners, handler, [bound.listener], handler_nursery=sessions))
                        task_status.started()
                self.close()
                await trio.sleep_forever()
        finally:
            self.close()

    def stop_accepting(self) -> None:
        """Refuse new connections (``serve`` then closes the listeners); open ones stay."""
        self._accepting.cancel()

    def close(self) -> None:
        """Close the listening sockets and remove our socket file(s); idempotent."""
        for bound in self.bound:
            bound.listener.socket.close()
            bound.close_file()

    async def _handle(self, context: WireContext, transport: str, stream: trio.SocketStream) -> None:
        try:
            async with trio.open_nursery() as nursery:
                await self._handshake_and_serve(context, transport, stream, nursery)
                nursery.cancel_scope.cancel()
        except Exception:
            log.exception("connection failed")
        finally:
            await trio.aclose_forcefully(stream)

    async def _handshake_and_serve(self, context: WireContext, transport: str, stream: trio.SocketStream, nursery: trio.Nursery) -> None:
        request = None
        with trio.move_on_after(HANDSHAKE_TIMEOUT_S):
            request = await wrap_server_stream(
                nursery,
                stream,
                message_queue_size=1,
                max_message_size=context.settings.tuning.max_message_bytes,
                receive_buffer_size=RECEIVE_BUFFER,
            )
        if request is None:
            return
        # wsproto keeps Host out of ``headers``; trio-websocket has no public accessor.
        host = request._event.host  # noqa: SLF001
        refusal = check_handshake(request.path, host, request.headers, transport)
        if refusal is not None:
            log.info("handshake refused", status=refusal.status, reason=refusal.reason, transport=transport)
            await request.reject(refusal.status, body=refusal.reason.encode())
            return
        ws = await request.accept()
        session = Session(context, ws, transport)
        code = await session.run()
        if not session.dead:
            with trio.move_on_after(CLOSE_TIMEOUT_S):
                try:
                    await ws.aclose(code)
                except ConnectionClosed:
                    pass
