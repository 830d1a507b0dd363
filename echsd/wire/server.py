"""The WebSocket server: listeners, the opening handshake, one ``Session`` per connection.

Two phases, so a second daemon on the same state dir refuses to start before it touches
anything: ``bind`` claims the addresses (first thing at start-up), ``serve`` accepts
connections once the thread service exists. At shutdown ``stop_accepting`` comes first;
open connections keep receiving events (e.g. the ``turn.interrupted`` of the shutdown)
until the daemon's root nursery is cancelled.

trio-websocket's ``serve_websocket`` is TCP-only, so each listener runs under
``trio.serve_listeners`` and every accepted stream is wrapped with ``wrap_server_stream``.

Until a connection has said a good ``hello`` it costs little and lives briefly: it must be
admitted (``echsd.wire.admission``: caps derived from the file-descriptor limit), its
messages may be at most ``PRE_AUTH_MESSAGE_BYTES`` (raised to ``max_message_bytes`` by
the hello), and the WebSocket handshake plus the hello must be done within
``[tuning] hello_timeout_s`` of connecting.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import trio
from trio_websocket import ConnectionClosed, WebSocketConnection, wrap_server_stream

from echsd.logs import get_logger
from echsd.settings import Settings
from echsd.wire.admission import Admission, ConnectionLimits, Ticket
from echsd.wire.handshake import check_handshake, over_capacity_response
from echsd.wire.listeners import Bound, bind
from echsd.wire.session import PRE_AUTH_MESSAGE_BYTES, Session, WireContext

log = get_logger(__name__)

CLOSE_TIMEOUT_S = 2.0
RECEIVE_BUFFER = 65536
MAX_REFUSING = 16  # over-capacity refusals lingering at once (each holds a descriptor)
REFUSAL_LINGER_S = 1.0  # read what the refused client sent, so the close is not a reset
PRESSURE_LOG_S = 10.0  # refusals and evictions are logged at most this often (a flood is many)


class WireServer:
    def __init__(self, settings: Settings, limits: ConnectionLimits | None = None, *, admission: Admission | None = None) -> None:
        """``admission``: share another server's (the descriptors are one process's)."""
        self.settings = settings
        self.bound: list[Bound] = []
        self.admission = admission or Admission(limits or ConnectionLimits.of_process())
        self._refusing = 0
        self._pressure_logged: float | None = None
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
        log.info("connection limits", limits=self.admission.limits.describe())

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
            with trio.CancelScope() as scope:
                ticket = self.admission.admit(transport, scope.cancel)
                if ticket is None:
                    await self._refuse_over_capacity(stream)
                    return
                try:
                    async with trio.open_nursery() as nursery:
                        await self._handshake_and_serve(context, transport, stream, nursery, ticket)
                        nursery.cancel_scope.cancel()
                except* (ConnectionClosed, trio.BrokenResourceError, trio.ClosedResourceError):
                    # e.g. trio-websocket's reader answering a malformed handshake to a peer gone
                    log.debug("the client left", transport=transport)
                finally:
                    self.admission.release(ticket)
            if scope.cancelled_caught:
                self._log_pressure()
        except Exception:
            log.exception("connection failed")
        finally:
            await trio.aclose_forcefully(stream)

    async def _refuse_over_capacity(self, stream: trio.SocketStream) -> None:
        """HTTP 503 naming the limit, before reading anything; then a short linger so the
        client reads the answer instead of a reset (a bounded number at once)."""
        limits = self.admission.limits
        self._log_pressure()
        if self._refusing >= MAX_REFUSING:
            return
        self._refusing += 1
        try:
            with trio.move_on_after(REFUSAL_LINGER_S):
                await stream.send_all(over_capacity_response(limits.max_connections))
                await stream.send_eof()
                while await stream.receive_some(RECEIVE_BUFFER):
                    pass
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            self._refusing -= 1

    def _log_pressure(self) -> None:
        now = trio.current_time()
        if self._pressure_logged is None or now - self._pressure_logged >= PRESSURE_LOG_S:
            self._pressure_logged = now
            admission = self.admission
            log.warning(
                "too many connections: refusing new ones over the limit and closing the oldest unauthenticated",
                open=admission.open,
                refused_total=admission.refused,
                evicted_total=admission.evicted,
                limits=admission.limits.describe(),
            )

    async def _handshake_and_serve(
        self, context: WireContext, transport: str, stream: trio.SocketStream, nursery: trio.Nursery, ticket: Ticket
    ) -> None:
        deadline = trio.current_time() + context.settings.tuning.hello_timeout_s
        request = None
        with trio.move_on_at(deadline):
            request = await wrap_server_stream(
                nursery,
                stream,
                message_queue_size=1,
                max_message_size=PRE_AUTH_MESSAGE_BYTES,  # raised by a good hello
                receive_buffer_size=RECEIVE_BUFFER,
            )
        if request is None:
            log.debug("no WebSocket handshake before the hello deadline", transport=transport)
            return
        # wsproto keeps Host out of ``headers``; trio-websocket has no public accessor.
        host = request._event.host  # noqa: SLF001
        refusal = check_handshake(request.path, host, request.headers, transport)
        try:
            if refusal is not None:
                log.info("handshake refused", status=refusal.status, reason=refusal.reason, transport=transport)
                await request.reject(refusal.status, body=refusal.reason.encode())
                return
            ws = await request.accept()
        except ConnectionClosed:
            log.debug("the client left during the handshake", transport=transport)
            return
        session = Session(context, ws, transport, deadline, on_authenticated=partial(self._authenticated, ticket, ws, context))
        code = await session.run()
        if not session.dead:
            with trio.move_on_after(CLOSE_TIMEOUT_S):
                try:
                    await ws.aclose(code)
                except ConnectionClosed:
                    pass

    def _authenticated(self, ticket: Ticket, ws: WebSocketConnection, context: WireContext) -> None:
        self.admission.authenticated(ticket)
        allow_messages_up_to(ws, context.settings.tuning.max_message_bytes)


def allow_messages_up_to(ws: WebSocketConnection, size: int) -> None:
    """Raise a connection's message size limit (after a good ``hello``).

    trio-websocket takes ``max_message_size`` only when the connection is made, but
    compares each incoming message part with ``_max_message_size`` as it arrives
    (``WebSocketConnection._handle_message_event``), so changing that attribute applies
    from the next message on. There is no public setter; tests/wire/test_flood.py checks
    the behaviour, so a trio-websocket release that changes it fails there, not silently.
    """
    if not hasattr(ws, "_max_message_size"):
        raise RuntimeError("this trio-websocket has no _max_message_size: the frame limit cannot be raised")
    ws._max_message_size = size  # noqa: SLF001
