"""The lean streaming path's connections: keep-alive, what is never reused, unix sockets,
TLS, and the proxied path through httpx."""

from __future__ import annotations

import ssl
import subprocess
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import trio
import trio.testing

from echsd.codex import ModelError, TextDelta
from echsd.codex.h1io import ConnectionPool
from echsd.codex.http import HttpClient
from echsd.codex.mock import MockUpstream
from echsd.codex.transport import TransportFailure
from tests.codex.helpers import client_for, directive, request

OK = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"


class TinyServer:
    """Answers every request with ``answer``; counts connections and their ends."""

    def __init__(self, answer: bytes = OK, *, close_after: bool = False, stall_after: bool = False) -> None:
        self.answer = answer
        self.close_after = close_after  # close the connection after each answer (no notice)
        self.stall_after = stall_after  # keep the connection open, answering nothing more
        self.connections = 0
        self.ended = 0
        self.heads: list[bytes] = []
        self.changed = trio.Event()

    async def handle(self, stream: trio.abc.Stream) -> None:
        self.connections += 1
        buffer = b""
        try:
            while True:
                while b"\r\n\r\n" not in buffer:
                    data = await stream.receive_some(65536)
                    if not data:
                        return
                    buffer += data
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                length = int(next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")))
                while len(buffer) < length:
                    buffer += await stream.receive_some(65536)
                buffer = buffer[length:]
                self.heads.append(head)
                await stream.send_all(self.answer)
                if self.close_after:
                    return
                if self.stall_after:
                    while await stream.receive_some(65536):
                        pass
                    return
        except trio.BrokenResourceError:
            return
        finally:
            await trio.aclose_forcefully(stream)
            self.ended += 1
            self.changed.set()
            self.changed = trio.Event()

    async def until(self, ended: int) -> None:
        with trio.fail_after(5):
            while self.ended < ended:
                await self.changed.wait()


def pool(**kwargs: Any) -> ConnectionPool:
    kwargs.setdefault("tls", ssl.create_default_context)
    return ConnectionPool(connect_timeout_s=5, read_timeout_s=5, **kwargs)


async def post(connections: ConnectionPool, url: str, *, whole: bool = True) -> tuple[int, bytes]:
    async with connections.post(url, urlsplit(url), b'{"x": 1}', {"Content-Type": "application/json"}) as response:
        first = await response.next_chunk()
        rest = (await response.read()) if whole else b""
        return response.status, first + rest


async def serving(nursery: trio.Nursery, server: TinyServer) -> str:
    listeners = await nursery.start(partial(trio.serve_tcp, server.handle, 0, host="127.0.0.1"))
    return f"http://127.0.0.1:{listeners[0].socket.getsockname()[1]}/v1/responses"


async def test_connections_are_kept_alive_and_reused(nursery: trio.Nursery) -> None:
    server = TinyServer()
    url = await serving(nursery, server)
    connections = pool()
    assert await post(connections, url) == (200, b"hello")
    assert await post(connections, url) == (200, b"hello")
    assert server.connections == 1 and len(server.heads) == 2
    assert server.heads[0].startswith(b"POST /v1/responses HTTP/1.1\r\nHost: 127.0.0.1:")
    await connections.aclose()
    await server.until(1)


async def test_a_connection_the_server_closed_while_idle_is_not_reused(nursery: trio.Nursery) -> None:
    server = TinyServer(close_after=True)
    url = await serving(nursery, server)
    connections = pool()
    assert await post(connections, url) == (200, b"hello")
    await server.until(1)  # closed behind our back, with no notice in the answer
    assert await post(connections, url) == (200, b"hello")
    assert server.connections == 2


async def test_a_response_left_before_its_end_closes_its_connection(nursery: trio.Nursery) -> None:
    server = TinyServer(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n", stall_after=True)
    url = await serving(nursery, server)
    connections = pool()
    assert await post(connections, url, whole=False) == (200, b"hello")
    await server.until(1)  # the server saw us hang up
    assert await post(connections, url, whole=False) == (200, b"hello")
    assert server.connections == 2


async def test_a_unix_socket_serves_every_url(nursery: trio.Nursery, tmp_path: Path) -> None:
    server = TinyServer()
    path = str(tmp_path / "upstream.sock")
    sock = trio.socket.socket(trio.socket.AF_UNIX)
    await sock.bind(path)
    sock.listen()
    nursery.start_soon(trio.serve_listeners, server.handle, [trio.SocketListener(sock)])
    connections = pool(unix_socket=path)
    assert await post(connections, "http://model.invalid/v1/responses") == (200, b"hello")
    assert b"\r\nHost: model.invalid\r\n" in server.heads[0]


async def test_tls_with_the_trusted_certificates(nursery: trio.Nursery, tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(cert, key)
    server = TinyServer()

    async def tls_handle(stream: trio.SocketStream) -> None:
        await server.handle(trio.SSLStream(stream, server_context, server_side=True))

    listeners = await nursery.start(partial(trio.serve_tcp, tls_handle, 0, host="127.0.0.1"))
    url = f"https://localhost:{listeners[0].socket.getsockname()[1]}/v1/responses"
    trusted = pool(tls=lambda: ssl.create_default_context(cafile=str(cert)))
    assert await post(trusted, url) == (200, b"hello")
    assert await post(trusted, url) == (200, b"hello")
    assert server.connections == 1  # kept alive over TLS too
    with pytest.raises(TransportFailure, match="cannot connect") as failure:
        await post(pool(), url)  # the system's trust store does not know this certificate
    assert failure.value.kind == "connect"


async def test_a_proxy_named_in_the_environment_is_used(mock: MockUpstream, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", mock.base_url.rsplit("/v1", 1)[0])
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    client = HttpClient(connect_timeout_s=5, read_timeout_s=5)
    async with client.stream_post("http://model.invalid/v1/responses", b"{}", {}) as response:
        assert response.status == 404  # the proxy (the mock) got the absolute URL
        assert b"no route for http://model.invalid/v1/responses" in await response.read()
    await client.aclose()


async def test_the_idle_timeout_counts_only_time_spent_waiting_on_the_socket(mock: MockUpstream) -> None:
    client = client_for(mock.base_url, idle_timeout_s=0.2)
    text = ""
    async with client.stream(request(directive({"text": "one two three", "delay_ms": 20}))) as events:
        async for event in events:
            if isinstance(event, TextDelta):
                text += event.delta
                await trio.sleep(0.5)  # a consumer slower than the timeout: the upstream is not idle
    assert text == "one two three"
    stalled = client_for(mock.base_url, idle_timeout_s=0.2, max_retries=0)
    with pytest.raises(ModelError, match="no data .* in time"):
        async with stalled.stream(request(directive({"text": "a b", "fault": "stall", "after_deltas": 1}))) as events:
            async for _ in events:
                pass


async def test_a_client_closed_while_httpx_is_being_built_is_never_used(mock: MockUpstream) -> None:
    """The httpx client is built in a worker thread; a close that lands meanwhile (echsd
    stopping) must leave no request to go out on it: the caller gets a transport error."""
    import threading

    client = HttpClient(connect_timeout_s=5, read_timeout_s=5)
    gate, build = threading.Event(), client._new_client
    client._new_client = lambda: (gate.wait(10), build())[1]  # type: ignore[method-assign]
    outcome: list[BaseException | tuple[int, Any, Any]] = []

    async def fetch() -> None:
        try:
            outcome.append(await client.get(mock.base_url + "/models", {}))
        except TransportFailure as exc:
            outcome.append(exc)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(fetch)
        await trio.testing.wait_all_tasks_blocked()  # the build is under way in its thread
        await client.aclose()
        gate.set()
    [failure] = outcome
    assert isinstance(failure, TransportFailure), failure
    assert "closed" in failure.message
