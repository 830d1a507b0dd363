"""Codex ChatGPT login: bearer access token + ``chatgpt-account-id``, refreshed as Codex does.

Mirrors openai/codex ``login/src/auth/manager.rs``: the access token (a JWT) is refreshed
proactively when its ``exp`` is near (or, lacking ``exp``, when ``last_refresh`` is over
8 days old), and once after a 401. Before refreshing, auth.json is re-read: if another
process (the ``codex`` CLI, another daemon) already refreshed it, its token is used instead
of spending the single-use refresh token. Refreshed tokens are written back atomically.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Mapping

import orjson
import trio

from echsd.codex.auth_file import (
    AuthFileError,
    Tokens,
    account_id_from_id_token,
    jwt_expiry,
    read_tokens,
    write_tokens,
)
from echsd.codex.classify import parse_error_body
from echsd.codex.errors import AuthFailed, UpstreamUnavailable
from echsd.codex.http import HttpClient, TransportFailure
from echsd.logs import get_logger, register_secret

log = get_logger(__name__)

DEFAULT_REFRESH_URL = "https://auth.openai.com/oauth/token"
CLIENT_ID = "app_EMoamEEZ73f0CkXaXp7hrann"
REFRESH_MARGIN_S = 300.0  # refresh when the access token expires within 5 minutes
STALE_AFTER_S = 8 * 24 * 3600.0  # Codex's TOKEN_REFRESH_INTERVAL when the JWT has no exp
_PERMANENT_CODES = frozenset({"refresh_token_expired", "refresh_token_reused", "refresh_token_invalidated", "invalid_grant"})


class CodexAuth:
    def __init__(self, codex_home: Path, refresh_url: str | None = None) -> None:
        self.path = Path(codex_home) / "auth.json"
        self.refresh_url = refresh_url or os.environ.get("ECHS_CODEX_REFRESH_URL") or DEFAULT_REFRESH_URL
        self._tokens: Tokens | None = None
        self._document: dict = {}
        self._lock = trio.Lock()  # one refresh at a time: refresh tokens are single-use

    def __repr__(self) -> str:
        return f"CodexAuth({str(self.path.parent)!r})"

    async def headers(self, http: HttpClient) -> dict[str, str]:
        tokens = self._tokens or await self._load()
        if _needs_refresh(tokens):
            async with self._lock:
                tokens = await self._load()
                if _needs_refresh(tokens):
                    try:
                        tokens = await self._refresh(http, tokens)
                    except (AuthFailed, UpstreamUnavailable) as exc:
                        # Like Codex: keep going with the current token; a 401 retries the refresh.
                        log.warning("proactive token refresh failed", error=exc.message)
        return _headers(tokens)

    async def recover_unauthorized(self, http: HttpClient, sent: Mapping[str, str]) -> bool:
        async with self._lock:
            tokens = await self._load()
            if sent.get("Authorization") != f"Bearer {tokens.access_token}":
                return True  # auth.json changed under us: try the token found there
            await self._refresh(http, tokens)
            return True

    async def _load(self) -> Tokens:
        try:
            tokens, self._document = await trio.to_thread.run_sync(read_tokens, self.path)
        except AuthFileError as exc:
            raise AuthFailed(str(exc)) from None
        self._tokens = tokens
        return tokens

    async def _refresh(self, http: HttpClient, tokens: Tokens) -> Tokens:
        if not tokens.refresh_token:
            raise AuthFailed(f"{self.path} has no refresh token: run `codex login`")
        body = orjson.dumps(
            {
                "client_id": CLIENT_ID,
                "grant_type": "refresh_token",
                "refresh_token": tokens.refresh_token,
                "scope": "openid profile email",
            }
        )
        try:
            status, _, raw = await http.post(self.refresh_url, body, {"Content-Type": "application/json"})
        except TransportFailure as exc:
            raise UpstreamUnavailable(f"cannot refresh the ChatGPT login: {exc.message}") from exc
        if status != 200:
            fields = parse_error_body(raw)
            detail = fields.message
            reason = f"{self.refresh_url} answered HTTP {status}" + (f" ({detail})" if detail else "")
            if status in (400, 401, 403) or fields.kinds & _PERMANENT_CODES:
                raise AuthFailed(f"the ChatGPT login could not be refreshed: {reason}; run `codex login`")
            raise UpstreamUnavailable(f"cannot refresh the ChatGPT login: {reason}")
        try:
            answer = orjson.loads(raw)
        except orjson.JSONDecodeError:
            answer = None
        if not isinstance(answer, dict) or not isinstance(answer.get("access_token"), str):
            raise UpstreamUnavailable(f"token refresh at {self.refresh_url} returned no access_token")
        for name in ("access_token", "refresh_token", "id_token"):
            register_secret(answer.get(name) if isinstance(answer.get(name), str) else None)
        id_token = answer.get("id_token")
        id_token = id_token if isinstance(id_token, str) else tokens.id_token
        refreshed = replace(
            tokens,
            access_token=answer["access_token"],
            refresh_token=answer.get("refresh_token") or tokens.refresh_token,
            id_token=id_token,
            account_id=tokens.account_id or account_id_from_id_token(id_token),
            last_refresh=datetime.now(UTC),
        )
        await trio.to_thread.run_sync(write_tokens, self.path, self._document, refreshed)
        self._tokens = refreshed
        log.info("refreshed the ChatGPT access token", path=str(self.path))
        return refreshed


def _needs_refresh(tokens: Tokens) -> bool:
    expiry = jwt_expiry(tokens.access_token)
    if expiry is not None:
        return expiry - time.time() <= REFRESH_MARGIN_S
    if tokens.last_refresh is not None:
        return time.time() - tokens.last_refresh.timestamp() > STALE_AFTER_S
    return False


def _headers(tokens: Tokens) -> dict[str, str]:
    headers = {"Authorization": f"Bearer {tokens.access_token}"}
    if tokens.account_id:
        headers["chatgpt-account-id"] = tokens.account_id
    return headers
