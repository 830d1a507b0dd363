"""How requests authenticate: an API key, a Codex ChatGPT login (``CodexAuth``), or nothing.

An ``Auth`` gives the headers for the next request and, when the upstream answers 401,
may repair itself once (``CodexAuth`` refreshes its token); the client then retries.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Protocol

from echsd.logs import register_secret

if TYPE_CHECKING:
    from echsd.codex.http import HttpClient


class Auth(Protocol):
    async def headers(self, http: HttpClient) -> dict[str, str]:
        """Headers for the next request (may refresh credentials first)."""
        ...

    async def recover_unauthorized(self, http: HttpClient, sent: Mapping[str, str]) -> bool:
        """After a 401 to a request sent with ``sent`` headers: True if a retry could succeed."""
        ...


class NoAuth:
    """Local endpoints (the mock upstream, self-hosted servers)."""

    async def headers(self, http: HttpClient) -> dict[str, str]:
        return {}

    async def recover_unauthorized(self, http: HttpClient, sent: Mapping[str, str]) -> bool:
        return False

    def __repr__(self) -> str:
        return "NoAuth()"


class ApiKeyAuth:
    """``Authorization: Bearer <OPENAI_API_KEY>``; a 401 is final."""

    def __init__(self, key: str) -> None:
        register_secret(key)
        self._key = key

    async def headers(self, http: HttpClient) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._key}"}

    async def recover_unauthorized(self, http: HttpClient, sent: Mapping[str, str]) -> bool:
        return False

    def __repr__(self) -> str:
        return "ApiKeyAuth(key=[REDACTED])"
