"""A minimal HTTP/1.1 server connection on h11 (already an httpx dependency).

Enough for the mock: keep-alive, request bodies, fixed-length JSON answers, chunked
streaming answers, and noticing a client that hangs up while we stream to it.
"""

from __future__ import annotations

from typing import Any

import h11
import orjson
import trio

MAX_RECEIVE = 65536


class Connection:
    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self._h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=1 << 20)
        self._stash = b""  # bytes received while we were streaming (the next request)

    async def next_request(self) -> tuple[h11.Request, bytes] | None:
        """The next request and its body; None when the client closed the connection."""
        request: h11.Request | None = None
        body: list[bytes] = []
        while True:
            event = self._h11.next_event()
            if event is h11.NEED_DATA:
                data, self._stash = self._stash or await self.stream.receive_some(MAX_RECEIVE), b""
                self._h11.receive_data(data)
            elif isinstance(event, h11.Request):
                request = event
            elif isinstance(event, h11.Data):
                body.append(event.data)
            elif isinstance(event, h11.EndOfMessage):
                assert request is not None
                return request, b"".join(body)
            elif isinstance(event, h11.ConnectionClosed):
                return None

    def reusable(self) -> bool:
        """Start the next request/response cycle if both sides allow it."""
        if self._h11.our_state is h11.DONE and self._h11.their_state is h11.DONE:
            self._h11.start_next_cycle()
            return True
        return False

    async def send_json(self, status: int, body: Any, headers: list[tuple[str, str]]) -> None:
        payload = orjson.dumps(body)
        head = [("content-type", "application/json"), ("content-length", str(len(payload))), *headers]
        await self.stream.send_all(
            (self._h11.send(h11.Response(status_code=status, headers=head)) or b"")
            + (self._h11.send(h11.Data(data=payload)) or b"")
            + (self._h11.send(h11.EndOfMessage()) or b"")
        )

    async def start_stream(self, headers: list[tuple[str, str]]) -> None:
        """Send the head of a chunked answer."""
        head = [("content-type", "text/event-stream"), ("cache-control", "no-cache"), *headers]
        await self.stream.send_all(self._h11.send(h11.Response(status_code=200, headers=head)) or b"")

    def frame(self, data: bytes) -> bytes:
        """``data`` as one chunk of the streaming answer, to be sent with ``send_framed``."""
        return self._h11.send(h11.Data(data=data)) or b""

    async def send_framed(self, framed: bytes) -> None:
        await self.stream.send_all(framed)

    async def write(self, data: bytes) -> None:
        await self.stream.send_all(self.frame(data))

    async def end_stream(self) -> None:
        await self.stream.send_all(self._h11.send(h11.EndOfMessage()) or b"")

    async def watch_for_hangup(self, hung_up: trio.Event, scope: trio.CancelScope) -> None:
        """Run beside a streaming answer: when the client goes away, set ``hung_up`` and cancel ``scope``."""
        while True:
            try:
                data = await self.stream.receive_some(MAX_RECEIVE)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                data = b""
            if not data:
                hung_up.set()
                scope.cancel()
                return
            self._stash += data
