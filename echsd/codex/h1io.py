"""The IO shell of the model stream: connections to the endpoint (TCP, TLS, or a unix
socket), kept alive between requests, and one streamed response read off one of them.

Rules kept from the httpx path it replaces for streaming (``echsd.codex.http``): every
failure is a ``TransportFailure`` of kind ``connect`` (unreachable, TLS refused),
``timeout`` (no bytes for ``read_timeout_s``) or ``network`` (reset, cut off, malformed);
connections idle for more than ``KEEPALIVE_EXPIRY_S``, or readable while idle (closed by
the server), are never reused, and at most ``KEEPALIVE_MAX`` wait; a response left before
its end (break, error, cancellation) closes its connection at once. Per receive there is
one parser call, whatever the number of HTTP chunks in it, and no cancel scope: the idle
timeout is kept by one watchdog task per event loop (``IdleWatch``), which closes the
connection of a response that has waited on its socket for longer than its timeout (the
waiting receive then fails, and is reported as the timeout). A cancel scope per receive
cost a third of a receive's CPU.
"""

from __future__ import annotations

import select
import ssl
import time
from contextlib import asynccontextmanager
from typing import AsyncIterator, Callable, Mapping
from urllib.parse import SplitResult

import trio

from echsd.codex.transport import TransportFailure, failure_reason
from echsd.codex.h1 import ProtocolError, ResponseReader, default_port, request_head

KEEPALIVE_MAX = 32
KEEPALIVE_EXPIRY_S = 5.0
RECEIVE_BYTES = 65536
WRITE_TIMEOUT_S = 60.0
ERROR_BODY_MAX = 4 << 20  # an error answer longer than this is cut (it is only shown)
_SEND_APART = 65536  # a body at least this long goes in its own send (no copy)

Key = tuple[str, str, int]


class _Conn:
    __slots__ = ("stream", "fd", "idle_since")

    def __init__(self, stream: trio.abc.Stream, fd: int) -> None:
        self.stream = stream
        self.fd = fd
        self.idle_since = 0.0

    def alive(self) -> bool:
        """Idle and unread: a readable idle connection was closed by the server (or holds
        bytes nobody asked for); either way it cannot carry a request."""
        return time.monotonic() - self.idle_since < KEEPALIVE_EXPIRY_S and not select.select([self.fd], [], [], 0)[0]


class StreamedResponse:
    """Status, headers (lower-case names) and the body as it arrives."""

    __slots__ = ("url", "status", "headers", "_stream", "_reader", "idle_s", "waiting_since", "timed_out")

    def __init__(self, url: str, stream: trio.abc.Stream, reader: ResponseReader, idle_s: float) -> None:
        self.url = url
        self._stream = stream
        self._reader = reader
        self.idle_s = idle_s
        self.waiting_since = 0.0  # trio.current_time() when a receive began; 0.0: not receiving
        self.timed_out = False  # set by the watchdog, which then closed the connection
        self.status = reader.status
        self.headers = reader.headers

    async def next_chunk(self) -> bytes:
        """The body bytes that arrived (all HTTP chunks of one receive); ``b""`` at its end."""
        reader = self._reader
        while True:
            data = reader.take_body()
            if data or reader.complete:
                return data
            await self._receive()

    async def read(self) -> bytes:
        """The rest of the body (at most ``ERROR_BODY_MAX`` bytes of it are kept)."""
        parts: list[bytes] = []
        size = 0
        while chunk := await self.next_chunk():
            if size < ERROR_BODY_MAX:
                parts.append(chunk[: ERROR_BODY_MAX - size])
                size += len(parts[-1])
        return b"".join(parts)

    async def _receive(self) -> None:
        """One receive, fed to the parser."""
        self.waiting_since = trio.current_time()
        try:
            data = await self._stream.receive_some(RECEIVE_BYTES)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            if self.timed_out:
                raise TransportFailure(f"no data from {self.url} in time (idle timeout)", kind="timeout") from None
            raise TransportFailure(f"connection to {self.url} failed: {failure_reason(exc)}", kind="network") from exc
        finally:
            self.waiting_since = 0.0
        if self.timed_out:  # the watchdog struck as the data came
            raise TransportFailure(f"no data from {self.url} in time (idle timeout)", kind="timeout")
        try:
            self._reader.feed(data) if data else self._reader.eof()
        except ProtocolError as exc:
            raise TransportFailure(f"connection to {self.url} failed: {exc}", kind="network") from exc


class IdleWatch:
    """The idle timeout of every response being read in one trio run: a task that wakes
    a few times per shortest timeout while responses are open and closes the connection of
    any that has waited on its socket for longer than its own timeout."""

    def __init__(self) -> None:
        self.open: set[StreamedResponse] = set()
        self._running = False

    def watch(self, response: StreamedResponse) -> None:
        self.open.add(response)
        if not self._running:
            self._running = True
            trio.lowlevel.spawn_system_task(self._run, name="echsd.codex.h1io.IdleWatch")

    async def _run(self) -> None:
        try:
            while self.open:
                await trio.sleep(min(1.0, min(r.idle_s for r in self.open) / 4))
                now = trio.current_time()
                for response in list(self.open):
                    since = response.waiting_since
                    if since and now - since >= response.idle_s and not response.timed_out:
                        response.timed_out = True
                        _close_transport(response._stream)
        finally:
            self._running = False


_IDLE_WATCH: trio.lowlevel.RunVar[IdleWatch] = trio.lowlevel.RunVar("echsd.codex.h1io.idle_watch")


def idle_watch() -> IdleWatch:
    """This trio run's watchdog."""
    try:
        return _IDLE_WATCH.get()
    except LookupError:
        watch = IdleWatch()
        _IDLE_WATCH.set(watch)
        return watch


class ConnectionPool:
    """Connections by (scheme, host, port); or all to one unix socket (``unix_socket``)."""

    def __init__(self, *, connect_timeout_s: float, read_timeout_s: float, tls: Callable[[], ssl.SSLContext], unix_socket: str | None = None) -> None:
        self._connect_timeout_s = connect_timeout_s
        self._read_timeout_s = read_timeout_s
        self._tls_factory = tls
        self._tls: ssl.SSLContext | None = None
        self._unix_socket = unix_socket
        self._idle: list[tuple[Key, _Conn]] = []  # oldest first

    @asynccontextmanager
    async def post(self, url: str, parts: SplitResult, body: bytes, headers: Mapping[str, str]) -> AsyncIterator[StreamedResponse]:
        """POST ``body`` and hold the response open; the connection goes back to the pool
        only if the response was read to its end and may be reused."""
        try:
            head = request_head("POST", parts, headers, len(body))
        except ProtocolError as exc:
            raise TransportFailure(f"cannot send the request to {url}: {exc}", kind="network") from exc
        key = (parts.scheme, parts.hostname or "", parts.port or default_port(parts.scheme))
        conn = self._reuse(key) or await self._connect(url, key)
        reader = ResponseReader()
        response = StreamedResponse(url, conn.stream, reader, self._read_timeout_s)
        watch = idle_watch()
        watch.watch(response)
        kept = False
        try:
            await self._send(url, conn, head, body)
            while not reader.head_done:
                await response._receive()
            response.status, response.headers = reader.status, reader.headers
            yield response
            kept = reader.reusable
        finally:
            watch.open.discard(response)
            if kept and not response.timed_out:
                self._keep(key, conn)
            else:
                await trio.aclose_forcefully(conn.stream)

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        for _, conn in idle:
            await trio.aclose_forcefully(conn.stream)

    def _reuse(self, key: Key) -> _Conn | None:
        """The newest idle connection to ``key`` that can still carry a request."""
        idle = self._idle
        for index in range(len(idle) - 1, -1, -1):
            if idle[index][0] == key:
                conn = idle.pop(index)[1]
                if conn.alive():
                    return conn
                _close_transport(conn.stream)
        return None

    def _keep(self, key: Key, conn: _Conn) -> None:
        conn.idle_since = time.monotonic()
        self._idle.append((key, conn))
        if len(self._idle) > KEEPALIVE_MAX:
            _close_transport(self._idle.pop(0)[1].stream)

    async def _connect(self, url: str, key: Key) -> _Conn:
        scheme, host, port = key
        try:
            with trio.fail_after(self._connect_timeout_s):
                if scheme == "https" and self._tls is None:
                    await trio.to_thread.run_sync(self._tls_context)
                if self._unix_socket is not None:
                    tcp: trio.SocketStream = await trio.open_unix_socket(self._unix_socket)
                else:
                    tcp = await trio.open_tcp_stream(host, port)
                if scheme != "https":
                    return _Conn(tcp, tcp.socket.fileno())
                stream = trio.SSLStream(tcp, self._tls_context(), server_hostname=host, https_compatible=True)
                try:
                    await stream.do_handshake()
                except BaseException:
                    await trio.aclose_forcefully(tcp)
                    raise
                return _Conn(stream, tcp.socket.fileno())
        except trio.TooSlowError:
            raise TransportFailure(f"timed out connecting to {url}", kind="connect") from None
        except (OSError, trio.BrokenResourceError) as exc:
            raise TransportFailure(f"cannot connect to {url}: {failure_reason(exc)}", kind="connect") from exc

    def _tls_context(self) -> ssl.SSLContext:
        """Built once, first in a worker thread (loading the trusted certificates takes a while)."""
        if self._tls is None:
            context = self._tls_factory()
            context.set_alpn_protocols(["http/1.1"])
            self._tls = context
        return self._tls

    async def _send(self, url: str, conn: _Conn, head: bytes, body: bytes) -> None:
        try:
            with trio.fail_after(WRITE_TIMEOUT_S):
                if len(body) < _SEND_APART:
                    await conn.stream.send_all(head + body)
                else:
                    await conn.stream.send_all(head)
                    await conn.stream.send_all(body)
        except trio.TooSlowError:
            raise TransportFailure(f"timed out sending the request to {url}", kind="network") from None
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            raise TransportFailure(f"connection to {url} failed: {failure_reason(exc)}", kind="network") from exc


def _close_transport(stream: trio.abc.Stream) -> None:
    """Close a connection's socket without awaiting (no TLS goodbye: it is unused, or
    dead). A task waiting on it gets ``ClosedResourceError``."""
    transport = stream.transport_stream if isinstance(stream, trio.SSLStream) else stream
    if isinstance(transport, trio.SocketStream):
        trio.lowlevel.notify_closing(transport.socket)
        transport.socket.close()
