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

from echsd.wire.handshake import Refusal, check_bearer_door

PATHS = ("/", "/rpc")


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
    if transport == "tcp":
        how = "codex --remote-auth-token-env VAR, VAR holding `echsd token`"
        refusal = check_bearer_door(host, headers, expected_token=expected_token, allow_remote=allow_remote, how=how)
        if refusal is not None:
            return refusal
    elif any(name.lower() == b"origin" for name, _ in headers):
        return Refusal(403, "browser-originated connections (Origin header) are refused")
    if path.split("?", 1)[0] not in PATHS:
        return Refusal(404, "no such path; the app-server protocol lives at / (and /rpc)")
    return None
