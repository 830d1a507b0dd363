"""The async client library: ``async with connect() as client: await client.status()``.

Used by the ``echs`` CLI, the tests and any Python program. One ``Client`` is one
connection (re-opened by ``reconnect``); requests may be issued from several tasks at
once; failures raise ``WireError(code, message)``. ``client.events(thread_id)`` is an
async iterator over a thread's events (or ``"*"``) that survives connection losses and
backpressure gaps without losing or repeating an event (see ``echsd.wire.stream``);
``client.blackboard_events(prefix)`` is the same over the blackboard's changes
(``echsd.wire.board_stream``).

Importing this module is cheap: it pulls in trio, trio-websocket and msgpack, never the
daemon, store, codex or threads packages.
"""

from __future__ import annotations

import itertools
import os
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

import trio
from trio_websocket import ConnectionClosed, WebSocketConnection, wrap_client_stream

from echsd.wire import codec
from echsd.wire.discovery import DiscoveryError, Target, resolve_target, resolve_token
from echsd.wire.errors import ConnectionLost, WireError
from echsd.wire.board_stream import BoardEventStream
from echsd.wire.requests import RequestHelpers
from echsd.wire.stream import MAX_QUEUED, EventStream

__all__ = ["BoardEventStream", "Client", "ConnectionLost", "EventStream", "WireError", "connect"]

CONNECT_TIMEOUT_S = 5.0
RECONNECT_TIMEOUT_S = 30.0
CLOSE_TIMEOUT_S = 1.0
MAX_MESSAGE_BYTES = 256 * 1024 * 1024  # what we accept from the daemon (batches can be big)
DIRECT_BUFFER = 1000  # messages for this connection alone, held until read
RECEIVE_BUFFER = 65536


class _Pending:
    __slots__ = ("done", "response", "error")

    def __init__(self) -> None:
        self.done = trio.Event()
        self.response: dict[str, Any] | None = None
        self.error: WireError | None = None


class Client(RequestHelpers):
    """Create with ``connect()``."""

    def __init__(self, nursery: trio.Nursery, target: Target, token: str) -> None:
        self.target = target
        self.server: dict[str, Any] = {}  # the hello result: protocol, version
        self.generation = 0  # bumped by every (re)connection
        self._nursery = nursery
        self._token = token
        self._ws: WebSocketConnection | None = None
        self._ids = itertools.count(1)
        self._pending: dict[int, _Pending] = {}
        self._streams: dict[str, EventStream] = {}
        self._board_streams: dict[str, BoardEventStream] = {}  # by prefix
        self._reconnecting = trio.Lock()
        self._closed = False
        self._direct_send, self.direct_messages = trio.open_memory_channel[dict[str, Any]](DIRECT_BUFFER)
        """Messages the daemon sent to this connection alone (``seq`` null, e.g. ``tool.call``)."""

    @property
    def closed(self) -> bool:
        """Closed by ``aclose`` (event streams end; nothing reconnects)."""
        return self._closed

    @property
    def connected(self) -> bool:
        return self._ws is not None and self._ws.closed is None

    # -- connection ---------------------------------------------------------------------------

    async def _open(self, timeout: float = CONNECT_TIMEOUT_S) -> None:
        """Connect and say hello; only then does the connection become the client's."""
        ws: WebSocketConnection | None = None
        try:
            with trio.fail_after(timeout):
                stream = await self._open_stream()
                pending: dict[int, _Pending] = {}
                ws = await self._nursery.start(self._run_connection, stream, pending)
                hello = {"protocol": codec.PROTOCOL_VERSION, "token": self._token}
                self.server = await self._request_on(ws, pending, "hello", hello)
        except BaseException as exc:
            if ws is not None:
                with trio.CancelScope(shield=True), trio.move_on_after(CLOSE_TIMEOUT_S):
                    await ws.aclose()
            if isinstance(exc, trio.TooSlowError):
                raise WireError("unavailable", f"the daemon at {self.target} did not answer within {timeout:g} s") from None
            raise
        self._ws, self._pending = ws, pending
        self.generation += 1

    async def _open_stream(self) -> trio.SocketStream:
        target = self.target
        try:
            if target.kind == "unix":
                assert target.path is not None
                return await trio.open_unix_socket(target.path)
            assert target.host is not None and target.port is not None
            return await trio.open_tcp_stream(target.host, target.port)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise WireError("unavailable", f"cannot reach the daemon at {target}: {reason} (is `echsd serve` running?)") from None

    async def _run_connection(
        self, stream: trio.SocketStream, pending: dict[int, _Pending], *, task_status: Any = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Owns one WebSocket (and its requests in flight): handshake, then route frames."""
        started = False
        try:
            async with trio.open_nursery() as nursery:
                ws = await wrap_client_stream(
                    nursery,
                    stream,
                    self.target.host_header,
                    "/v1",
                    max_message_size=MAX_MESSAGE_BYTES,
                    receive_buffer_size=RECEIVE_BUFFER,
                )
                started = True
                task_status.started(ws)
                await self._read_frames(ws, pending)
                # trio-websocket's reader ends by itself once the closing handshake is done;
                # cancelling it sooner would leave ``ws.aclose()`` waiting for the reply.
                nursery.cancel_scope.deadline = trio.current_time() + CLOSE_TIMEOUT_S
        except Exception as exc:  # trio-websocket raises from its reader task, in a group
            if not started:
                raise _handshake_error(exc, self.target) from None
        finally:
            # First: closing the stream raises Cancelled when this task is being cancelled
            # (the client closed), which would leave the requests in flight waiting for ever.
            self._lost(pending)
            await trio.aclose_forcefully(stream)

    async def _read_frames(self, ws: WebSocketConnection, pending: dict[int, _Pending]) -> None:
        while True:
            try:
                message = await ws.get_message()
            except ConnectionClosed:
                return
            try:
                responses, events = codec.split_frame(message)
            except codec.FrameError:
                continue
            for response in responses:
                waiter = pending.get(response.get("id"))  # type: ignore[arg-type]
                if waiter is not None:
                    waiter.response = response
                    waiter.done.set()
            for event in events:
                if event.get("seq") is None:
                    try:
                        self._direct_send.send_nowait(event)
                    except trio.WouldBlock:
                        pass  # nobody reads them: the daemon's side times such requests out
                    continue
                prefix = event.get("blackboard")
                if prefix is not None and event.get("thread_id") is None:  # a blackboard subscription's
                    board_stream = self._board_streams.get(prefix)
                    if board_stream is not None:
                        board_stream._deliver(event)
                    continue
                for key in (event.get("thread_id"), "*"):
                    stream = self._streams.get(key)  # type: ignore[arg-type]
                    if stream is not None:
                        stream._deliver(event)

    def _lost(self, pending: dict[int, _Pending]) -> None:
        for waiter in pending.values():
            waiter.error = ConnectionLost()
            waiter.done.set()
        pending.clear()
        self._wake_streams()

    def _wake_streams(self) -> None:
        for stream in (*self._streams.values(), *self._board_streams.values()):
            stream._wake()

    async def _drop_connection(self) -> None:
        ws, self._ws = self._ws, None
        if ws is not None:
            with trio.move_on_after(CLOSE_TIMEOUT_S):
                await ws.aclose()

    async def reconnect(self, timeout: float = RECONNECT_TIMEOUT_S) -> None:
        """Open a new connection after a loss, retrying with backoff for up to ``timeout``."""
        async with self._reconnecting:
            if self.connected:
                return
            await self._drop_connection()
            deadline = trio.current_time() + timeout
            delay = 0.05
            while True:
                try:
                    await self._open(min(CONNECT_TIMEOUT_S, max(0.1, deadline - trio.current_time())))
                    return
                except WireError as exc:
                    if exc.code not in ("unavailable", "connection_lost") or trio.current_time() + delay > deadline:
                        raise
                await trio.sleep(delay)  # back-off between attempts
                delay = min(delay * 2, 1.0)

    async def aclose(self) -> None:
        self._closed = True
        self._wake_streams()
        await self._drop_connection()

    # -- requests -----------------------------------------------------------------------------

    async def request(self, op: str, params: dict[str, Any] | None = None) -> Any:
        """Send one request and return its result; raises ``WireError``."""
        ws = self._ws
        if ws is None or ws.closed is not None:
            raise ConnectionLost("not connected to the daemon")
        return await self._request_on(ws, self._pending, op, params or {})

    async def _request_on(self, ws: WebSocketConnection, pending: dict[int, _Pending], op: str, params: dict[str, Any]) -> Any:
        request_id = next(self._ids)
        waiter = pending[request_id] = _Pending()
        try:
            await ws.send_message(codec.encode_request(request_id, op, params))
            await waiter.done.wait()
        except ConnectionClosed:
            raise ConnectionLost() from None
        finally:
            pending.pop(request_id, None)
        if waiter.error is not None:
            raise waiter.error
        return codec.response_result(waiter.response or {})

    def events(self, thread_id: str, since: int = 0, *, max_queued: int = MAX_QUEUED, reconnect: bool = True) -> EventStream:
        """Every event of ``thread_id`` (or ``"*"``) with ``seq > since``, then live ones.

        Use as ``async for event in client.events(tid)`` or ``async with`` it to
        unsubscribe on exit. One stream per thread id (or ``*``) per client. At most
        ``max_queued`` events wait for the consumer; beyond that they are re-read from
        the daemon's log when the consumer gets there. With ``reconnect=False`` a lost
        connection ends the stream with ``WireError("connection_lost")``.
        """
        if thread_id in self._streams:
            raise ValueError(f"this client already has an event stream for {thread_id!r}")
        stream = EventStream(self, thread_id, since, max_queued, reconnect)
        self._streams[thread_id] = stream
        return stream

    def _forget_stream(self, stream: EventStream) -> None:
        if self._streams.get(stream.key) is stream:
            del self._streams[stream.key]

    def blackboard_events(
        self, prefix: str = "", since: int | None = None, *, max_queued: int = MAX_QUEUED, reconnect: bool = True
    ) -> BoardEventStream:
        """The blackboard's changes (``blackboard.changed``) to keys under ``prefix``: with
        ``since``, every logged change after that blackboard seq first; then live ones.

        Use as ``async for event in client.blackboard_events("team/")`` or ``async with`` it
        to unsubscribe on exit. One stream per prefix per client. It survives connection
        losses and backpressure by subscribing again from the last seq it yielded.
        """
        if prefix in self._board_streams:
            raise ValueError(f"this client already has a blackboard stream for {prefix!r}")
        stream = BoardEventStream(self, prefix, since, max_queued, reconnect)
        self._board_streams[prefix] = stream
        return stream

    def _forget_board_stream(self, stream: BoardEventStream) -> None:
        if self._board_streams.get(stream.prefix) is stream:
            del self._board_streams[stream.prefix]


def _handshake_error(exc: BaseException, target: Target) -> WireError:
    if isinstance(exc, BaseExceptionGroup):
        exc = _single(exc)
    if isinstance(exc, WireError):
        return exc
    status = getattr(exc, "status_code", None)
    if status is not None:
        body = (getattr(exc, "body", None) or b"").decode("utf-8", "replace")
        return WireError("handshake_refused", f"the daemon at {target} refused the connection: HTTP {status} {body}".rstrip())
    return WireError("unavailable", f"cannot open a WebSocket to {target}: {exc!r}")


@asynccontextmanager
async def connect(
    socket: str | os.PathLike[str] | None = None,
    url: str | None = None,
    token: str | None = None,
    state_dir: str | os.PathLike[str] | None = None,
    *,
    token_file: str | os.PathLike[str] | None = None,
    timeout: float = CONNECT_TIMEOUT_S,
) -> AsyncIterator[Client]:
    """Connect and authenticate (see ``echsd.wire.discovery`` for the defaults)."""
    try:
        target = resolve_target(socket, url, state_dir)
        secret = resolve_token(token, token_file, state_dir)
    except DiscoveryError as exc:
        raise WireError(exc.code, exc.message) from None
    try:
        async with trio.open_nursery() as nursery:
            client = Client(nursery, target, secret)
            try:
                await client._open(timeout)
                yield client
            finally:
                await client.aclose()
                nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        # Only our own connection tasks share the nursery and they never raise, so a group
        # holds one exception (the caller's, or ours from connecting): raise it as is.
        raise _single(group) from None


def _single(group: BaseExceptionGroup[BaseException]) -> BaseException:
    exc: BaseException = group
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc
