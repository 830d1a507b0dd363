"""Opening-handshake checks for the app-server listener (sans-IO).

The same defences as the native wire (``echsd.wire.handshake``), plus the bearer token:

- any ``Origin`` header is refused (403): no web page may drive the daemon;
- on TCP the ``Host`` must name a loopback address or ``localhost`` (403, DNS rebinding),
  unless the daemon was started with ``--allow-remote``;
- on TCP ``Authorization: Bearer <token>`` must carry the daemon's token (401), which the
  Codex TUI sends with ``--remote-auth-token-env VAR``. Over a unix socket the TUI sends
  no token: that door is guarded by the socket's mode (0600 in a 0700 directory);
- the TUI asks for ``/`` over TCP and ``/rpc`` over a unix socket; other paths get 404.
"""

from __future__ import annotations

from echsd.settings import is_loopback_host
from echsd.wire.handshake import Refusal, host_of
from echsd.wire.token import token_matches

PATHS = ("/", "/rpc")


def bearer_token(headers: list[tuple[bytes, bytes]]) -> str | None:
    for name, value in headers:
        if name.lower() == b"authorization":
            scheme, _, token = value.decode("latin-1").strip().partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
    return None


def check_handshake(
    path: str,
    host: str | None,
    headers: list[tuple[bytes, bytes]],
    transport: str,
    *,
    expected_token: str | None,
    allow_remote: bool,
) -> Refusal | None:
    """``transport`` is ``unix`` or ``tcp``; ``expected_token`` the daemon's (TCP only)."""
    if any(name.lower() == b"origin" for name, _ in headers):
        return Refusal(403, "browser-originated connections (Origin header) are refused")
    if transport == "tcp":
        if not allow_remote and not is_loopback_host(host_of(host or "").lower()):
            return Refusal(403, "the Host header must name a loopback address or localhost")
        given = bearer_token(headers)
        if given is None:
            return Refusal(401, "a bearer token is required (codex --remote-auth-token-env VAR, VAR holding `echsd token`)")
        if expected_token is None or not token_matches(given, expected_token):
            return Refusal(401, "wrong token")
    if path.split("?", 1)[0] not in PATHS:
        return Refusal(404, "no such path; the app-server protocol lives at / (and /rpc)")
    return None
