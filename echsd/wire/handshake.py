"""Opening-handshake checks (CONTRACT.md 3.1-3.2), sans-IO: a request's path and headers in,
an HTTP refusal (or ``None`` to accept) out.

- Any ``Origin`` header is refused with 403: browsers always send one, so no web page can
  drive the daemon, even through the loopback TCP port.
- On TCP the ``Host`` header must name a loopback address or ``localhost`` (403 otherwise):
  a DNS-rebinding page reaches 127.0.0.1 under a foreign name and is turned away here.
  On the unix socket any Host is fine (only local processes can connect).
- Only the path ``/v1`` exists (404 otherwise).
- A connection over the daemon's limit gets 503 (``over_capacity_response``).
"""

from __future__ import annotations

from dataclasses import dataclass

from echsd.settings import is_loopback_host
from echsd.wire.token import token_matches

PATH = "/v1"


@dataclass(frozen=True)
class Refusal:
    status: int
    reason: str


def host_of(header: str) -> str:
    """The host part of a ``Host`` header value (``[::1]:80`` -> ``::1``)."""
    header = header.strip()
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else header
    if header.count(":") == 1:
        return header.split(":", 1)[0]
    return header


def check_handshake(path: str, host: str | None, headers: list[tuple[bytes, bytes]], transport: str) -> Refusal | None:
    """``transport`` is ``unix`` or ``tcp``; returns the refusal to send, or None to accept."""
    if any(name.lower() == b"origin" for name, _ in headers):
        return Refusal(403, "browser-originated connections (Origin header) are refused")
    if transport == "tcp":
        if not is_loopback_host(host_of(host or "").lower()):
            return Refusal(403, "the Host header must name a loopback address or localhost")
    if path.split("?", 1)[0] != PATH:
        return Refusal(404, f"no such path; the protocol lives at {PATH}")
    return None


def bearer_token(headers: list[tuple[bytes, bytes]]) -> str | None:
    for name, value in headers:
        if name.lower() == b"authorization":
            scheme, _, token = value.decode("latin-1").strip().partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
    return None


def check_bearer_door(
    host: str | None, headers: list[tuple[bytes, bytes]], *, expected_token: str | None, allow_remote: bool, how: str
) -> Refusal | None:
    """The defences of a TCP door that takes the daemon's token as a bearer (the app-server,
    the MCP door): no ``Origin`` (403), a loopback ``Host`` unless ``allow_remote`` (403),
    ``Authorization: Bearer <token>`` (401; ``how`` says how a client sends it)."""
    if any(name.lower() == b"origin" for name, _ in headers):
        return Refusal(403, "browser-originated connections (Origin header) are refused")
    if not allow_remote and not is_loopback_host(host_of(host or "").lower()):
        return Refusal(403, "the Host header must name a loopback address or localhost")
    given = bearer_token(headers)
    if given is None:
        return Refusal(401, f"a bearer token is required ({how})")
    if expected_token is None or not token_matches(given, expected_token):
        return Refusal(401, "wrong token")
    return None


def over_capacity_response(limit: int) -> bytes:
    """The whole HTTP answer to a connection over the daemon's limit, sent before reading
    its request (clients report the status and body: ``handshake_refused``)."""
    body = f"echsd has too many connections open (its limit is {limit}); try again later\n".encode()
    head = (
        "HTTP/1.1 503 Service Unavailable\r\n"
        "Content-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Retry-After: 1\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode() + body
