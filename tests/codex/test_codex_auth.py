"""Codex ChatGPT login: headers, proactive refresh, 401 refresh-and-retry, auth.json write-back."""

from __future__ import annotations

import json
import stat
import time
from pathlib import Path

import pytest

from echsd.codex import AuthFailed, CodexAuth, Endpoint, ResponsesClient
from echsd.codex.mock import open_mock_upstream
from echsd.codex.mock.app import fake_jwt
from tests.codex.helpers import (
    RecordingBackoff,
    collect,
    collect_until_error,
    request,
    text_of,
    user,
)

ACCOUNT = "acct_0123456789"


def write_auth(home: Path, access_token: str, refresh_token: str = "refresh-token-one") -> Path:
    path = home / "auth.json"
    path.write_text(
        json.dumps(
            {
                "OPENAI_API_KEY": None,
                "tokens": {
                    "id_token": fake_jwt({"https://api.openai.com/auth": {"chatgpt_account_id": ACCOUNT}}),
                    "access_token": access_token,
                    "refresh_token": refresh_token,
                    "account_id": ACCOUNT,
                },
                "last_refresh": "2025-01-01T00:00:00.123456789Z",
                "kept_key": {"anything": 1},
            }
        )
    )
    return path


def codex_client(home: Path, base_url: str) -> ResponsesClient:
    auth = CodexAuth(home, refresh_url=base_url.removesuffix("/v1") + "/oauth/token")
    return ResponsesClient(Endpoint(base_url, auth), backoff=RecordingBackoff())


async def test_401_refreshes_writes_back_and_retries(tmp_path: Path) -> None:
    stale = fake_jwt({"exp": time.time() + 3600, "n": "stale"})
    path = write_auth(tmp_path, stale)
    async with open_mock_upstream(require_token="token-only-the-mock-knows") as mock:
        client = codex_client(tmp_path, mock.base_url)
        events = await collect(client, request(user("hi")))
        assert text_of(events) == "mock reply to: hi"
        first, refresh, retried = mock.requests
        assert first.bearer == stale
        assert first.headers["chatgpt-account-id"] == ACCOUNT
        assert refresh.path == "/oauth/token"
        assert refresh.body == {
            "client_id": "app_EMoamEEZ73f0CkXaXp7hrann",
            "grant_type": "refresh_token",
            "refresh_token": "refresh-token-one",
            "scope": "openid profile email",
        }
        assert retried.bearer == mock.app.accepted_token != stale
        assert retried.headers["chatgpt-account-id"] == ACCOUNT
    saved = json.loads(path.read_text())
    assert saved["tokens"]["access_token"] == retried.bearer
    assert saved["tokens"]["refresh_token"].startswith("mock-refresh-")
    assert saved["tokens"]["account_id"] == ACCOUNT
    assert saved["last_refresh"].startswith(time.strftime("%Y-", time.gmtime())) and saved["last_refresh"].endswith("Z")
    assert saved["kept_key"] == {"anything": 1} and saved["OPENAI_API_KEY"] is None
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert not [p for p in tmp_path.iterdir() if p.name != "auth.json"]  # no temp file left behind


async def test_token_near_expiry_is_refreshed_before_the_request(tmp_path: Path) -> None:
    write_auth(tmp_path, fake_jwt({"exp": time.time() + 60}))
    async with open_mock_upstream() as mock:
        client = codex_client(tmp_path, mock.base_url)
        await collect(client, request(user("hi")))
        assert [r.path for r in mock.requests] == ["/oauth/token", "/v1/responses"]
        assert mock.requests[1].bearer != mock.requests[0].body["refresh_token"]
        await collect(client, request(user("again")))
        assert [r.path for r in mock.requests][2:] == ["/v1/responses"]  # the fresh token is reused


async def test_token_refreshed_by_another_process_is_picked_up(tmp_path: Path) -> None:
    first = fake_jwt({"exp": time.time() + 3600, "n": 1})
    write_auth(tmp_path, first)
    async with open_mock_upstream(require_token=first) as mock:
        client = codex_client(tmp_path, mock.base_url)
        await collect(client, request(user("one")))
        second = fake_jwt({"exp": time.time() + 3600, "n": 2})
        write_auth(tmp_path, second, refresh_token="refresh-token-two")  # e.g. the codex CLI refreshed
        mock.app.accepted_token = second
        await collect(client, request(user("two")))
        assert [r.bearer for r in mock.requests] == [first, first, second]
        assert "/oauth/token" not in [r.path for r in mock.requests]


async def test_rejected_refresh_is_auth_failed(tmp_path: Path) -> None:
    write_auth(tmp_path, "not-a-jwt-but-a-token")
    async with open_mock_upstream(require_token="something-else-entirely") as mock:
        client = codex_client(tmp_path, mock.base_url)
        await collect_until_error(client, request(user("a")))  # spends refresh-token-one
        write_auth(tmp_path, "not-a-jwt-but-a-token")  # ...and a stale copy still holds it
        other = codex_client(tmp_path, mock.base_url)
        _, error = await collect_until_error(other, request(user("b")))
        assert isinstance(error, AuthFailed) and "codex login" in error.message and "HTTP 401" in error.message
        assert mock.requests[-1].path == "/oauth/token"


async def test_missing_login_is_auth_failed(tmp_path: Path) -> None:
    client = ResponsesClient(Endpoint("http://127.0.0.1:9/v1", CodexAuth(tmp_path)), backoff=RecordingBackoff())
    _, error = await collect_until_error(client, request(user("hi")))
    assert isinstance(error, AuthFailed) and "codex login" in error.message


def test_refresh_url_from_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ECHS_CODEX_REFRESH_URL", "http://127.0.0.1:1/oauth/token")
    assert CodexAuth(tmp_path).refresh_url == "http://127.0.0.1:1/oauth/token"
    assert CodexAuth(tmp_path, refresh_url="http://x/t").refresh_url == "http://x/t"
    monkeypatch.delenv("ECHS_CODEX_REFRESH_URL")
    assert CodexAuth(tmp_path).refresh_url == "https://auth.openai.com/oauth/token"
