"""HTTP for the model endpoint: the one module that imports httpx, and the door to the
lean streaming path (``h1`` + ``h1io``).

It exposes a tiny surface: a POST and a GET that return the whole body (httpx: compaction,
token refresh, the model list), a streaming POST, and ``TransportFailure`` for every
transport-level problem (no httpx or trio exception leaks). The streaming POST, the hot
path, goes over our own HTTP/1.1 connections (``httptools``, keep-alive, TLS from httpx's own context, so the
same certificates are trusted); where the environment names a proxy for the URL
(``HTTPS_PROXY`` and friends, as httpx reads them), it goes through httpx as well. Either
way the read timeout doubles as the stream's idle timeout: no bytes for
``read_timeout_s`` raises ``TransportFailure(kind="timeout")``.
"""

from __future__ import annotations

import os
import ssl
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, AsyncIterator, Mapping, Protocol
from urllib.parse import urlsplit

import trio

from echsd.codex.h1io import ConnectionPool
from echsd.codex.transport import TransportFailure, failure_reason

if TYPE_CHECKING:
    import httpx

__all__ = ["HttpClient", "StreamingResponse", "TransportFailure"]


class StreamingResponse(Protocol):
    """Status, headers (lower-case keys) and the body as it arrives."""

    url: str
    status: int
    headers: dict[str, str]

    async def next_chunk(self) -> bytes:
        """The next piece of the body; ``b""`` at its end."""

    async def read(self) -> bytes:
        """The rest of the body."""


def _translated(url: str, exc: httpx.TransportError) -> TransportFailure:
    httpx = _httpx()
    if isinstance(exc, httpx.ConnectTimeout):
        return TransportFailure(f"timed out connecting to {url}", kind="connect")
    if isinstance(exc, httpx.ConnectError):
        return TransportFailure(f"cannot connect to {url}: {failure_reason(exc)}", kind="connect")
    if isinstance(exc, httpx.TimeoutException):
        return TransportFailure(f"no data from {url} in time (idle timeout)", kind="timeout")
    return TransportFailure(f"connection to {url} failed: {failure_reason(exc)}", kind="network")


class _HttpxStreamingResponse:
    """A streaming response read through httpx (the proxied path)."""

    def __init__(self, url: str, response: httpx.Response) -> None:
        self.url = url
        self.status = response.status_code
        self.headers = {k.lower(): v for k, v in response.headers.items()}
        self._response = response
        self._chunks = response.aiter_bytes()
        self._errors = _httpx().TransportError

    async def next_chunk(self) -> bytes:
        try:
            return await self._chunks.__anext__()
        except StopAsyncIteration:
            return b""
        except self._errors as exc:
            raise _translated(self.url, exc) from exc

    async def read(self) -> bytes:
        try:
            return await self._response.aread()
        except self._errors as exc:
            raise _translated(self.url, exc) from exc

    async def _close(self) -> None:
        await self._chunks.aclose()  # type: ignore[attr-defined]


def _httpx() -> Any:
    import httpx

    return httpx


def _tls_context() -> ssl.SSLContext:
    return _httpx().create_ssl_context()  # the certificates httpx trusts (certifi, SSL_CERT_FILE, ...)


def _environment_proxies() -> dict[str, str]:
    """Proxies named in the environment, read once as httpx does (none: no import)."""
    if not any(key.lower().endswith("_proxy") for key in os.environ):
        return {}
    import urllib.request

    return urllib.request.getproxies()


class HttpClient:
    def __init__(self, *, connect_timeout_s: float, read_timeout_s: float, unix_socket: str | None = None) -> None:
        """``unix_socket``: connect there whatever the URL's host (the daemon's built-in mock)."""
        self._timeouts = (connect_timeout_s, read_timeout_s)
        self._client_: httpx.AsyncClient | None = None
        self._closed = False  # set by aclose: no httpx client is built or used after it
        self._pool = ConnectionPool(connect_timeout_s=connect_timeout_s, read_timeout_s=read_timeout_s, tls=_tls_context, unix_socket=unix_socket)
        self._unix_socket = unix_socket
        self._proxies = _environment_proxies()

    async def _client(self) -> httpx.AsyncClient:
        """The httpx client, built on first use in a worker thread: importing httpx and
        loading the trusted certificates takes tens of milliseconds, which the event loop
        would otherwise stand still for."""
        if self._client_ is None:
            built = await trio.to_thread.run_sync(self._new_client)
            if self._closed:  # closed while it was built: a late caller gets a transport error
                await built.aclose()
            elif self._client_ is None:  # (not built meanwhile by another first use)
                self._client_ = built
            # The thread's return resumes this task even if it was cancelled meanwhile, and
            # nothing up to httpx's send checks again: do it here, before the client is used.
            await trio.lowlevel.checkpoint_if_cancelled()
        if self._closed or self._client_ is None:
            raise TransportFailure("the model client was closed (echsd is stopping)", kind="network")
        return self._client_

    def _new_client(self) -> httpx.AsyncClient:
        httpx = _httpx()
        connect_timeout_s, read_timeout_s = self._timeouts
        timeout = httpx.Timeout(connect=connect_timeout_s, read=read_timeout_s, write=60.0, pool=60.0)
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=32)
        transport = httpx.AsyncHTTPTransport(uds=self._unix_socket, limits=limits) if self._unix_socket else None
        return httpx.AsyncClient(timeout=timeout, limits=limits, transport=transport)

    def _proxied(self, scheme: str, host: str) -> bool:
        proxies = self._proxies
        if self._unix_socket or not proxies or not (scheme in proxies or "all" in proxies):
            return False
        import urllib.request

        return not urllib.request.proxy_bypass_environment(host, proxies)

    @asynccontextmanager
    async def stream_post(self, url: str, content: bytes, headers: Mapping[str, str]) -> AsyncIterator[StreamingResponse]:
        """POST and hold the response open; it is closed on exit, break or cancellation."""
        parts = urlsplit(url)
        if parts.scheme in ("http", "https") and not self._proxied(parts.scheme, parts.hostname or ""):
            async with self._pool.post(url, parts, content, headers) as response:
                yield response
            return
        async with self._httpx_stream_post(url, content, headers) as proxied:
            yield proxied

    @asynccontextmanager
    async def _httpx_stream_post(self, url: str, content: bytes, headers: Mapping[str, str]) -> AsyncIterator[StreamingResponse]:
        client = await self._client()
        try:
            request = client.build_request("POST", url, content=content, headers=dict(headers))
            response = await client.send(request, stream=True)
        except _httpx().TransportError as exc:
            raise _translated(url, exc) from exc
        wrapped = _HttpxStreamingResponse(url, response)
        try:
            yield wrapped
        finally:
            try:
                await wrapped._close()
            finally:
                await response.aclose()

    async def post(self, url: str, content: bytes, headers: Mapping[str, str]) -> tuple[int, dict[str, str], bytes]:
        """POST and read the whole answer: (status, lower-case headers, body)."""
        client = await self._client()
        try:
            response = await client.post(url, content=content, headers=dict(headers))
        except _httpx().TransportError as exc:
            raise _translated(url, exc) from exc
        return response.status_code, {k.lower(): v for k, v in response.headers.items()}, response.content

    async def get(self, url: str, headers: Mapping[str, str]) -> tuple[int, dict[str, str], bytes]:
        """GET and read the whole answer: (status, lower-case headers, body)."""
        client = await self._client()
        try:
            response = await client.get(url, headers=dict(headers))
        except _httpx().TransportError as exc:
            raise _translated(url, exc) from exc
        return response.status_code, {k.lower(): v for k, v in response.headers.items()}, response.content

    async def aclose(self) -> None:
        self._closed = True
        await self._pool.aclose()
        if self._client_ is not None:
            await self._client_.aclose()
