"""Who may use the web view: one-time login codes and the sessions they open (sans-IO).

``echs web`` asks the daemon for a login code (``new_code``) and prints a URL carrying it;
the page trades it once (``redeem``) for a session: a random token the browser keeps in an
HttpOnly, SameSite=Strict cookie, and a CSRF token the page sends with every request that
changes something. A code works once and only for ``code_s``; a session ends after
``session_s`` or ``idle_s`` unused, or when ``revoke`` ends them all (``echs web
--revoke``). Everything lives in memory: a daemon restart logs every browser out.

Tokens are kept by their SHA-256 only, and compared in constant time. The clock is a
parameter (tests move time); nothing here does IO.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable

MAX_CODES = 16  # outstanding login codes; a newer one pushes out the oldest
MAX_SESSIONS = 64  # open sessions; a newer one ends the least recently used
TOKEN_BYTES = 32


class LoginRefused(Exception):
    """A login code that is unknown, used already or expired."""


@dataclass
class WebSession:
    csrf: str
    created: float
    used: float
    generation: int  # the revocation generation it was opened in


def _digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).digest()


class WebSessions:
    def __init__(self, *, code_s: float, session_s: float, idle_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.code_s, self.session_s, self.idle_s = code_s, session_s, idle_s
        self._clock = clock
        self._codes: OrderedDict[bytes, float] = OrderedDict()  # digest -> expiry
        self._sessions: OrderedDict[bytes, WebSession] = OrderedDict()  # digest -> session, least recently used first
        self.generation = 0  # bumped by ``revoke``: streams opened before it end

    # ---- login codes ----------------------------------------------------------------------

    def new_code(self) -> str:
        """A fresh one-time code, valid for ``code_s``."""
        self._expire_codes()
        code = secrets.token_urlsafe(TOKEN_BYTES)
        self._codes[_digest(code)] = self._clock() + self.code_s
        while len(self._codes) > MAX_CODES:
            self._codes.popitem(last=False)
        return code

    def redeem(self, code: str) -> tuple[str, WebSession]:
        """Trade a code (once) for a session: ``(session token, session)``."""
        self._expire_codes()
        expiry = self._codes.pop(_digest(code), None) if isinstance(code, str) and code else None
        if expiry is None:
            raise LoginRefused("this login link is used, expired or unknown: run `echs web` for a new one")
        token = secrets.token_urlsafe(TOKEN_BYTES)
        now = self._clock()
        session = WebSession(csrf=secrets.token_urlsafe(TOKEN_BYTES), created=now, used=now, generation=self.generation)
        self._sessions[_digest(token)] = session
        while len(self._sessions) > MAX_SESSIONS:
            self._sessions.popitem(last=False)
        return token, session

    # ---- sessions -------------------------------------------------------------------------

    def find(self, token: str | None, *, touch: bool = True) -> WebSession | None:
        """The live session of a cookie's token (None: none, expired or revoked)."""
        if not token:
            return None
        key = _digest(token)
        session = self._sessions.get(key)
        if session is None:
            return None
        now = self._clock()
        if now - session.created >= self.session_s or now - session.used >= self.idle_s:
            del self._sessions[key]
            return None
        if touch:
            session.used = now
            self._sessions.move_to_end(key)
        return session

    def alive(self, session: WebSession) -> bool:
        """Whether a session found earlier still stands; a live stream asks now and then,
        and a page that watches is in use (its session does not idle out)."""
        now = self._clock()
        if session.generation != self.generation or now - session.created >= self.session_s:
            return False
        if not any(held is session for held in self._sessions.values()):
            return False
        session.used = now
        return True

    def end(self, token: str | None) -> None:
        if token:
            self._sessions.pop(_digest(token), None)

    def revoke(self) -> dict[str, int]:
        """End every session and forget every unused code."""
        ended = {"sessions": len(self._sessions), "codes": len(self._codes)}
        self._sessions.clear()
        self._codes.clear()
        self.generation += 1
        return ended

    def expires_in(self, session: WebSession) -> float:
        """Seconds until the session ends, if it is used before it idles out."""
        return max(0.0, session.created + self.session_s - self._clock())

    def __len__(self) -> int:
        return len(self._sessions)

    def _expire_codes(self) -> None:
        now = self._clock()
        for key in [key for key, expiry in self._codes.items() if expiry <= now]:
            del self._codes[key]


def same_secret(given: str | None, expected: str) -> bool:
    """Constant-time comparison of a presented secret (a CSRF token) with the expected one."""
    return isinstance(given, str) and hmac.compare_digest(given.encode("utf-8", "surrogatepass"), expected.encode())
