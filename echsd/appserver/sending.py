"""Writing a connection's pending messages in few socket writes.

The app-server protocol puts every JSON message in a WebSocket frame of its own, and a
streaming turn sends one per delta. trio-websocket writes each message with its own
socket write (a lock, a send, a checkpoint): measured, that was most of the app-server's
CPU per delta. It has no call for writing several messages at once, so ``send_frames``
builds the frames with the connection's own wsproto state machine and writes up to
``WRITE_BYTES`` of them at a time under the connection's send lock, exactly as its
``send_message`` does for one (a broken stream aborts the WebSocket and raises
``ConnectionClosed``). Where those parts of trio-websocket are not there (another
version), the messages go one by one through ``send_message``.
"""

from __future__ import annotations

from typing import Any, Sequence

import trio
from trio_websocket import ConnectionClosed
from wsproto.events import TextMessage

WRITE_BYTES = 256 * 1024


async def send_frames(ws: Any, messages: Sequence[str]) -> None:
    proto, lock, stream = (getattr(ws, name, None) for name in ("_wsproto", "_stream_lock", "_stream"))
    if proto is None or lock is None or stream is None or not hasattr(ws, "_abort_web_socket"):
        for message in messages:
            await ws.send_message(message)
        return
    index = 0
    while index < len(messages):
        if ws.closed is not None:
            raise ConnectionClosed(ws.closed)
        parts: list[bytes] = []
        size = 0
        while index < len(messages) and (not parts or size < WRITE_BYTES):
            frame = proto.send(TextMessage(data=messages[index]))
            parts.append(frame)
            size += len(frame)
            index += 1
        async with lock:
            try:
                await stream.send_all(b"".join(parts))
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                await ws._abort_web_socket()
                raise ConnectionClosed(ws.closed) from None
