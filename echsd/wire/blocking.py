"""A blocking, one-connection client for one-shot commands (``echs ls``, ``echs status``).

Importing trio and trio-websocket costs ~150 ms, most of a short command's run time. A
command that sends a few requests and exits needs no event loop: this client speaks the
same protocol over a plain socket with wsproto (sans-IO, already a dependency) and our
codec. Its ``async`` request methods (from ``RequestHelpers``) never suspend, so
``drive`` runs an ``async def action(client)`` written for the async ``Client`` to
completion without an event loop. Streaming (``events``) needs the async ``Client``.
"""

from __future__ import annotations

import socket
from collections.abc import Coroutine
from typing import Any, TypeVar

from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, BytesMessage, CloseConnection, Ping, RejectConnection, RejectData, Request, TextMessage

from echsd.wire import codec
from echsd.wire.discovery import DiscoveryError, Target, resolve_target, resolve_token
from echsd.wire.errors import ConnectionLost, WireError
from echsd.wire.requests import RequestHelpers

T = TypeVar("T")
TIMEOUT_S = 30.0
READ_CHUNK = 65536


class BlockingClient(RequestHelpers):
    def __init__(self, target: Target, token: str, timeout: float = TIMEOUT_S) -> None:
        self.target = target
        self.server: dict[str, Any] = {}
        self._token = token
        self._timeout = timeout
        self._sock: socket.socket | None = None
        self._ws = WSConnection(ConnectionType.CLIENT)
        self._ids = 0
        self._parts: list[bytes] = []  # fragments of the message being received
        self._messages: list[bytes] = []  # whole messages not yet read
        self._closed_because: str | None = None  # the daemon's close reason, once it closed

    # -- connection ---------------------------------------------------------------------------

    def open(self) -> None:
        self._sock = self._connect()
        self._sock.sendall(self._ws.send(Request(host=self.target.host_header, target="/v1")))
        while True:
            for event in self._events():
                if isinstance(event, AcceptConnection):
                    self.server = self._roundtrip("hello", {"protocol": codec.PROTOCOL_VERSION, "token": self._token})
                    return
                if isinstance(event, (RejectConnection, RejectData)):
                    status = getattr(event, "status_code", "")
                    raise WireError("handshake_refused", f"the daemon at {self.target} refused the connection: HTTP {status}".rstrip())

    def _connect(self) -> socket.socket:
        target = self.target
        try:
            if target.kind == "unix":
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.settimeout(self._timeout)
                sock.connect(str(target.path))
            else:
                sock = socket.create_connection((target.host, target.port), timeout=self._timeout)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise WireError("unavailable", f"cannot reach the daemon at {target}: {reason} (is `echsd serve` running?)") from None
        return sock

    @property
    def connected(self) -> bool:
        return self._sock is not None and self._closed_because is None

    async def reconnect(self, timeout: float | None = None) -> None:
        """A new connection in place of a lost one (one attempt; ``timeout``: per answer)."""
        self.close()
        self._ws = WSConnection(ConnectionType.CLIENT)
        self._parts, self._messages, self._closed_because = [], [], None
        if timeout is not None:
            self._timeout = timeout
        self.open()

    def close(self) -> None:
        if self._sock is None:
            return
        try:
            self._sock.sendall(self._ws.send(CloseConnection(code=1000)))
        except Exception:  # closing is best effort: the daemon may be gone already
            pass
        self._sock.close()
        self._sock = None

    def __enter__(self) -> "BlockingClient":
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- frames -------------------------------------------------------------------------------

    def _events(self) -> list[Any]:
        assert self._sock is not None
        try:
            data = self._sock.recv(READ_CHUNK)
        except socket.timeout:
            raise WireError("unavailable", f"the daemon at {self.target} did not answer within {self._timeout:g} s") from None
        except OSError:
            raise ConnectionLost() from None
        if not data:
            raise ConnectionLost()
        self._ws.receive_data(data)
        return list(self._ws.events())

    def _next_message(self) -> bytes:
        """The next whole message; a close is reported only after the messages before it."""
        while not self._messages:
            if self._closed_because is not None:
                raise ConnectionLost(f"the daemon closed the connection: {self._closed_because}")
            for event in self._events():
                if isinstance(event, Ping):
                    self._sock.sendall(self._ws.send(event.response()))  # type: ignore[union-attr]
                elif isinstance(event, CloseConnection):
                    self._closed_because = event.reason or str(event.code)
                elif isinstance(event, (BytesMessage, TextMessage)):
                    data = event.data if isinstance(event.data, bytes) else event.data.encode()
                    self._parts.append(data)
                    if event.message_finished:
                        message, self._parts = b"".join(self._parts), []
                        self._messages.append(message)
        return self._messages.pop(0)

    def _roundtrip(self, op: str, params: dict[str, Any]) -> Any:
        if self._sock is None:
            raise ConnectionLost("not connected to the daemon")
        self._ids += 1
        request_id = self._ids
        self._sock.sendall(self._ws.send(BytesMessage(data=codec.encode_request(request_id, op, params))))
        while True:
            responses, _events = codec.split_frame(self._next_message())
            for response in responses:
                if response.get("id") == request_id:
                    return codec.response_result(response)

    async def request(self, op: str, params: dict[str, Any] | None = None) -> Any:
        """Blocking under an ``async`` signature, so actions run unchanged (see ``drive``)."""
        return self._roundtrip(op, params or {})


def blocking_connect(
    socket_path: str | None = None,
    url: str | None = None,
    token: str | None = None,
    state_dir: str | None = None,
    *,
    token_file: str | None = None,
    timeout: float = TIMEOUT_S,
) -> BlockingClient:
    """Resolve the daemon and token like ``connect`` does; use as a context manager."""
    try:
        target = resolve_target(socket_path, url, state_dir)
        secret = resolve_token(token, token_file, state_dir)
    except DiscoveryError as exc:
        raise WireError(exc.code, exc.message) from None
    return BlockingClient(target, secret, timeout)


def drive(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine that never suspends (it only awaits a ``BlockingClient``)."""
    try:
        coroutine.send(None)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]
    coroutine.close()
    raise RuntimeError("a one-shot action tried to suspend: it needs the async Client")
