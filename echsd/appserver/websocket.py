"""The app-server's server-side WebSocket: trio-websocket's, failing a connection with the
close code the protocol asks for.

wsproto refuses a frame it cannot accept (a text message that is not UTF-8, a bad opcode)
by handing up a ``CloseConnection`` carrying the code to fail with (1007 for non-UTF-8 text,
RFC 6455 7.4.1; 1002 for protocol errors), while the connection is still open.
trio-websocket 0.12 answers that by dropping the socket without any close frame, so the
client learned nothing. Here the refusal is answered as a close: a close frame with that
code, then the socket is closed (the private hooks used are pinned by
``tests/appserver/test_security.py::test_invalid_utf8_text_closes_with_1007``).
"""

from __future__ import annotations

import trio
from trio_websocket import WebSocketConnection, WebSocketRequest
from trio_websocket._impl import MAX_MESSAGE_SIZE, MESSAGE_QUEUE_SIZE, RECEIVE_BYTES  # the defaults wrap_server_stream uses
from wsproto import ConnectionType, WSConnection
from wsproto.connection import ConnectionState
from wsproto.events import CloseConnection


class _FailingConnection(WebSocketConnection):
    async def _handle_close_connection_event(self, event: CloseConnection) -> None:
        if self._wsproto.state is ConnectionState.OPEN:  # not the peer's close: a frame wsproto refused
            try:
                await self._send(CloseConnection(code=event.code, reason=event.reason))
            except Exception:  # the socket is going anyway: closing it is what is left to do
                pass
        await super()._handle_close_connection_event(event)


async def wrap_server_stream(nursery: trio.Nursery, stream: trio.abc.Stream, *, max_message_size: int = MAX_MESSAGE_SIZE) -> WebSocketRequest:
    """``trio_websocket.wrap_server_stream``, with ``_FailingConnection``."""
    connection = _FailingConnection(
        stream,
        WSConnection(ConnectionType.SERVER),
        message_queue_size=MESSAGE_QUEUE_SIZE,
        max_message_size=max_message_size,
        receive_buffer_size=RECEIVE_BYTES,
    )
    nursery.start_soon(connection._reader_task)
    return await connection._get_request()
