"""The one module that imports httpx (swapping in a maintained fork is an import change).

It exposes a tiny surface: a POST that returns the whole body, a streaming POST, and
``TransportFailure`` for every transport-level problem (httpx's exceptions never leak).
httpx runs natively on trio. Its read timeout doubles as the stream's idle timeout: no
bytes for ``read_timeout_s`` raises ``TransportFailure(kind="timeout")``.
"""

from __future__ import annotations

import socket
from contextlib import asynccontextmanager, contextmanager
from typing import AsyncIterator, Iterator, Mapping

import httpx


class TransportFailure(Exception):
    """``kind``: ``connect`` (unreachable), ``timeout`` (no bytes in time), ``network`` (reset, cut off)."""

    def __init__(self, message: str, *, kind: str) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind


def _os_errors(exc: BaseException | None, depth: int = 0) -> Iterator[OSError]:
    """The OSErrors behind an httpx error (trio reports connect failures as a group)."""
    if exc is None or depth > 8:
        return
    if isinstance(exc, OSError) and exc.errno is not None:
        yield exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _os_errors(inner, depth + 1)
    yield from _os_errors(exc.__cause__ or exc.__context__, depth + 1)


def _reason(exc: BaseException) -> str:
    for error in _os_errors(exc):
        if isinstance(error, ConnectionRefusedError):
            return "connection refused"
        if isinstance(error, socket.gaierror):
            return "host not found"
        return error.strerror or str(error)
    return str(exc).strip() or type(exc).__name__


@contextmanager
def _translated(url: str) -> Iterator[None]:
    try:
        yield
    except httpx.ConnectTimeout as exc:
        raise TransportFailure(f"timed out connecting to {url}", kind="connect") from exc
    except httpx.ConnectError as exc:
        raise TransportFailure(f"cannot connect to {url}: {_reason(exc)}", kind="connect") from exc
    except httpx.TimeoutException as exc:
        raise TransportFailure(f"no data from {url} in time (idle timeout)", kind="timeout") from exc
    except httpx.TransportError as exc:
        raise TransportFailure(f"connection to {url} failed: {_reason(exc)}", kind="network") from exc


class StreamingResponse:
    """Status, headers (lower-case keys) and the body as it arrives."""

    def __init__(self, url: str, response: httpx.Response) -> None:
        self.url = url
        self.status = response.status_code
        self.headers = {k.lower(): v for k, v in response.headers.items()}
        self._response = response
        self._chunks: AsyncIterator[bytes] | None = None

    async def next_chunk(self) -> bytes:
        """The next piece of the body; ``b""`` at its end."""
        if self._chunks is None:
            self._chunks = self._response.aiter_bytes()
        with _translated(self.url):
            try:
                return await self._chunks.__anext__()
            except StopAsyncIteration:
                return b""

    async def read(self) -> bytes:
        with _translated(self.url):
            return await self._response.aread()

    async def _close(self) -> None:
        if self._chunks is not None:
            await self._chunks.aclose()  # type: ignore[attr-defined]


class HttpClient:
    def __init__(self, *, connect_timeout_s: float, read_timeout_s: float) -> None:
        timeout = httpx.Timeout(connect=connect_timeout_s, read=read_timeout_s, write=60.0, pool=60.0)
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=32)
        self._client = httpx.AsyncClient(timeout=timeout, limits=limits)

    @asynccontextmanager
    async def stream_post(self, url: str, content: bytes, headers: Mapping[str, str]) -> AsyncIterator[StreamingResponse]:
        """POST and hold the response open; it is closed on exit, break or cancellation."""
        with _translated(url):
            request = self._client.build_request("POST", url, content=content, headers=dict(headers))
            response = await self._client.send(request, stream=True)
        wrapped = StreamingResponse(url, response)
        try:
            yield wrapped
        finally:
            try:
                await wrapped._close()
            finally:
                await response.aclose()

    async def post(self, url: str, content: bytes, headers: Mapping[str, str]) -> tuple[int, dict[str, str], bytes]:
        """POST and read the whole answer: (status, lower-case headers, body)."""
        with _translated(url):
            response = await self._client.post(url, content=content, headers=dict(headers))
        return response.status_code, {k.lower(): v for k, v in response.headers.items()}, response.content

    async def aclose(self) -> None:
        await self._client.aclose()
