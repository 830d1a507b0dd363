"""The web door's defences, sans-IO: a request's method, path and headers in, a refusal out.

The native wire refuses browsers outright (an ``Origin`` header is a 403); the web view is
the door made for them, so it checks what a browser's request carries instead:

- ``Host`` must name this listener (``allowed_hosts``): a DNS-rebinding page reaches the
  port under a name of its own and is turned away before anything else;
- an ``Origin`` header, where present, must be the view's own origin (``http://`` + the
  Host), and every request that changes something must carry one; ``Sec-Fetch-Site``
  (sent by current browsers) must not say another site for the API;
- the API needs the session cookie (``sessions``) and, to change anything, the session's
  CSRF token in ``X-Echsd-Csrf``;
- what is served says so: no framing, no sniffing, a script policy of the page's own files.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from http.cookies import CookieError, SimpleCookie
from typing import Iterable, Mapping

from echsd.settings import ListenAddress, is_loopback_host
from echsd.web.sessions import same_secret
from echsd.wire.handshake import Refusal

CSRF_HEADER = "x-echsd-csrf"
SAFE_METHODS = ("GET", "HEAD")
WILDCARDS = ("0.0.0.0", "::", "")
SECURITY_HEADERS = (
    ("content-security-policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
     "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
    ("x-content-type-options", "nosniff"),
    ("x-frame-options", "DENY"),
    ("referrer-policy", "no-referrer"),
    ("cross-origin-opener-policy", "same-origin"),
    ("cross-origin-resource-policy", "same-origin"),
)  # fmt: skip


def allowed_hosts(address: ListenAddress, port: int) -> frozenset[str]:
    """Every ``Host`` header value that names this listener: its host (as configured) with
    the port; for a loopback listener also ``localhost`` and the loopback address; for a
    wildcard one (``--allow-remote``), this machine's names."""
    host = (address.host or "").lower()
    names = {host}
    if is_loopback_host(host):
        names |= {"localhost", "127.0.0.1"} if ":" not in host else {"localhost", "::1"}
    if host in WILDCARDS:
        names = {"localhost", "127.0.0.1", socket.gethostname().lower(), socket.getfqdn().lower()}
    return frozenset(f"[{name}]:{port}" if ":" in name else f"{name}:{port}" for name in names if name)


@dataclass(frozen=True)
class Request:
    """What the guard reads of a request (lower-case header names)."""

    method: str
    path: str
    headers: Mapping[str, str]

    @property
    def host(self) -> str:
        return self.headers.get("host", "").strip().lower()

    @property
    def origin(self) -> str:
        """The view's own origin, as this request's (checked) Host names it."""
        return f"http://{self.host}"

    def cookie(self, name: str) -> str | None:
        raw = self.headers.get("cookie")
        if not raw:
            return None
        jar: SimpleCookie = SimpleCookie()
        try:
            jar.load(raw)
        except CookieError:
            return None
        morsel = jar.get(name)
        return morsel.value if morsel is not None else None


def check_host(request: Request, hosts: Iterable[str]) -> Refusal | None:
    """``Host`` names this listener (a missing port means 80)."""
    host = request.host
    if host.startswith("["):
        host = host if "]:" in host else host + ":80"
    elif ":" not in host:
        host += ":80"
    if host not in hosts:
        return Refusal(403, "the Host header does not name this listener (a DNS-rebinding defence): open the URL `echs web` prints")
    return None


def check_origin(request: Request, *, api: bool) -> Refusal | None:
    """A foreign ``Origin`` is refused everywhere; a request that changes something must
    carry the view's own; the API refuses what a browser says came from another site."""
    origin = request.headers.get("origin")
    if origin is not None and origin.lower() != request.origin:
        return Refusal(403, f"cross-origin requests are refused (Origin {origin!r} is not this view's)")
    if request.method not in SAFE_METHODS and origin is None:
        return Refusal(403, "a request that changes something must carry the view's Origin header")
    if api and request.headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
        return Refusal(403, "requests from other sites are refused")
    return None


def check_csrf(request: Request, expected: str) -> Refusal | None:
    if request.method in SAFE_METHODS:
        return None
    if not same_secret(request.headers.get(CSRF_HEADER), expected):
        return Refusal(403, "missing or wrong CSRF token (reload the page)")
    return None


def session_cookie(port: int) -> str:
    """The cookie's name: one per port, since cookies are kept per host, not per port."""
    return f"echsd_session_{port}"


def set_cookie(name: str, token: str, max_age_s: float) -> str:
    return f"{name}={token}; Max-Age={int(max_age_s)}; Path=/; HttpOnly; SameSite=Strict"


def clear_cookie(name: str) -> str:
    return f"{name}=; Max-Age=0; Path=/; HttpOnly; SameSite=Strict"
