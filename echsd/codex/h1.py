"""Sans-IO HTTP/1.1 for the model stream: the request's bytes, and the response read by
``httptools`` (llhttp, the C parser the ASGI servers use).

Why not h11 under httpx here: with a real endpoint every SSE event is its own HTTP chunk,
and the pure-Python layers (h11's reader, httpcore's event loop, httpx's iterators) cost
more per chunk than the rest of the daemon's work on a delta. ``ResponseReader`` is fed
whatever the socket returned and hands back the body bytes of *all* the chunks in it at
once, so a burst of events is one piece of work downstream. No sockets, clocks or files
here: the IO shell is ``echsd.codex.stream``.
"""

from __future__ import annotations

import zlib
from typing import Mapping
from urllib.parse import SplitResult

import httptools

# Encodings we can undo; we ask for none (``accept-encoding: identity``), but a server may
# ignore that.
_DECODERS = {b"gzip": 16 + zlib.MAX_WBITS, b"x-gzip": 16 + zlib.MAX_WBITS, b"deflate": zlib.MAX_WBITS}
_FORBIDDEN = frozenset("\r\n\0")


class ProtocolError(Exception):
    """The bytes are not an HTTP/1.1 response we can read (or the request cannot be sent)."""


def default_port(scheme: str) -> int:
    return 443 if scheme == "https" else 80


def request_head(method: str, url: SplitResult, headers: Mapping[str, str], body_length: int) -> bytes:
    """The request line and headers. ``Host`` and ``Content-Length`` are ours; we ask for
    an unencoded body. A name or value with CR, LF or NUL (header injection) is refused."""
    target = (url.path or "/") + (f"?{url.query}" if url.query else "")
    host = url.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    if url.port is not None and url.port != default_port(url.scheme):
        host = f"{host}:{url.port}"
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host}", f"Content-Length: {body_length}"]
    given = {name.lower() for name in headers}
    if "accept-encoding" not in given:
        lines.append("Accept-Encoding: identity")
    for name, value in headers.items():
        if name.lower() in ("host", "content-length", "transfer-encoding", "connection"):
            continue
        if _FORBIDDEN.intersection(name) or _FORBIDDEN.intersection(value) or ":" in name or not name:
            raise ProtocolError(f"header {name!r} cannot be sent (empty, or a colon, CR, LF or NUL in it)")
        lines.append(f"{name}: {value}")
    try:
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    except UnicodeEncodeError:
        raise ProtocolError("a request header holds characters HTTP/1.1 cannot carry") from None


class ResponseReader:
    """One response: ``feed`` it bytes, ``eof()`` at end of stream; read ``status``,
    ``headers`` (lower-case names; the last of repeated ones, as the rest of the code reads
    them), and ``take_body()``. ``complete`` once the body ended; ``reusable`` when the
    connection may carry another request."""

    __slots__ = ("_parser", "status", "headers", "head_done", "complete", "_body", "_framed", "_messages", "_decoder", "_keep_alive")

    def __init__(self) -> None:
        self._parser = httptools.HttpResponseParser(self)
        self.status = 0
        self.headers: dict[str, str] = {}
        self.head_done = False
        self.complete = False
        self._body: list[bytes] = []
        self._framed = False  # chunked or content-length: else the body ends at close
        self._messages = 0
        self._keep_alive = False
        self._decoder: zlib._Decompress | None = None

    # -- httptools callbacks
    def on_message_begin(self) -> None:
        self._messages += 1

    def on_header(self, name: bytes, value: bytes) -> None:
        key = name.lower()
        if key == b"transfer-encoding" or key == b"content-length":
            self._framed = True
        self.headers[key.decode("latin-1")] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        status = self._parser.get_status_code()
        if 100 <= status < 200:  # informational (100 Continue): the real answer follows
            self.headers = {}
            self._framed = False
            self._messages -= 1
            return
        self.status = status
        self.head_done = True
        if status in (204, 304):
            self._framed = True
        encoding = self.headers.get("content-encoding", "identity").strip().lower().encode()
        if encoding not in (b"identity", b""):
            wbits = _DECODERS.get(encoding)
            if wbits is None:
                raise ProtocolError(f"the response is encoded as {encoding.decode()!r}, which we did not ask for")
            self._decoder = zlib.decompressobj(wbits)

    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        if self.head_done:
            self.complete = True
            self._keep_alive = self._parser.should_keep_alive()  # llhttp forgets it right after

    # -- the caller's side
    def feed(self, data: bytes) -> None:
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserCallbackError as exc:  # one of ours, raised in a callback
            if isinstance(exc.__context__, ProtocolError):
                raise exc.__context__ from None
            raise
        except httptools.HttpParserError as exc:
            raise ProtocolError(f"malformed HTTP response: {exc}") from None
        except httptools.HttpParserUpgrade:
            raise ProtocolError("the server switched protocols") from None

    def eof(self) -> None:
        """The connection closed: fine after a complete response, or ending a body that had
        no length; otherwise the response was cut off."""
        if self.complete:
            return
        if self.head_done and not self._framed:
            self.complete = True
            return
        if self.head_done:
            raise ProtocolError("the connection closed before the response body ended")
        raise ProtocolError("the server closed the connection without answering")

    def take_body(self) -> bytes:
        """The body bytes received since the last call, decoded."""
        body = self._body
        if not body:
            return b""
        data = body[0] if len(body) == 1 else b"".join(body)
        body.clear()
        if self._decoder is not None:
            try:
                data = self._decoder.decompress(data)
            except zlib.error as exc:
                raise ProtocolError(f"the response body does not decode: {exc}") from None
        return data

    @property
    def reusable(self) -> bool:
        return self.complete and self._keep_alive and self._framed and self._messages == 1 and not self._body
