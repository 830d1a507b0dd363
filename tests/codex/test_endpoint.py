"""Settings.endpoint: provider -> URL and auth, as ``serve`` resolves them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from echsd import __version__
from echsd.codex import ApiKeyAuth, CodexAuth, NoAuth
from echsd.settings import load_settings


def settings(tmp_path: Path, flags: dict, **env: str):
    base = {"HOME": str(tmp_path), "ECHS_STATE_DIR": str(tmp_path / "state"), "CODEX_HOME": str(tmp_path / "codex")}
    return load_settings(flags, {**base, **env})


def test_openai_with_key(tmp_path: Path) -> None:
    endpoint = settings(tmp_path, {"provider": "openai"}, OPENAI_API_KEY="sk-test-key-123").endpoint()
    assert isinstance(endpoint.auth, ApiKeyAuth)
    assert endpoint.responses_url == "https://api.openai.com/v1/responses"
    assert endpoint.compact_url == "https://api.openai.com/v1/responses/compact"
    assert "sk-test-key-123" not in repr(endpoint)


def test_openai_local_endpoint_without_key(tmp_path: Path) -> None:
    endpoint = settings(tmp_path, {"provider": "openai", "base_url": "http://127.0.0.1:8765/v1/"}).endpoint()
    assert isinstance(endpoint.auth, NoAuth) and endpoint.responses_url == "http://127.0.0.1:8765/v1/responses"


def test_codex_login(tmp_path: Path) -> None:
    (tmp_path / "codex").mkdir()
    (tmp_path / "codex" / "auth.json").write_text(json.dumps({"tokens": {"access_token": "a", "refresh_token": "r"}}))
    endpoint = settings(tmp_path, {}).endpoint()
    assert isinstance(endpoint.auth, CodexAuth) and endpoint.auth.path == tmp_path / "codex" / "auth.json"
    assert endpoint.responses_url == "https://chatgpt.com/backend-api/codex/responses"


def test_mock_needs_the_callers_url(tmp_path: Path) -> None:
    mock = settings(tmp_path, {"provider": "mock"})
    endpoint = mock.endpoint("http://127.0.0.1:5555/v1")
    assert isinstance(endpoint.auth, NoAuth) and endpoint.base_url == "http://127.0.0.1:5555/v1"
    with pytest.raises(ValueError):
        mock.endpoint()


def test_codex_provider_introduces_itself_as_codex_does(tmp_path: Path) -> None:
    (tmp_path / "codex").mkdir()
    (tmp_path / "codex" / "auth.json").write_text(json.dumps({"tokens": {"access_token": "a", "refresh_token": "r"}}))
    headers = settings(tmp_path, {}, OPENAI_ORGANIZATION="org-x").endpoint().headers
    assert headers["originator"] == "codex_cli_rs" and headers["version"] == "0.169.0"
    assert re.fullmatch(r"codex_cli_rs/\d+\.\d+\.\d+ \([^;()]+ [^;()]+; [^;()]+\) echsd/" + re.escape(__version__), headers["User-Agent"])
    assert "OpenAI-Organization" not in headers  # an API header, not a ChatGPT one


def test_openai_provider_sends_organization_and_project(tmp_path: Path) -> None:
    plain = settings(tmp_path, {"provider": "openai"}, OPENAI_API_KEY="sk-1").endpoint().headers
    assert plain["User-Agent"].startswith(f"echsd/{__version__} (") and plain["originator"] == "echsd" and "version" not in plain
    assert "OpenAI-Organization" not in plain and "OpenAI-Project" not in plain
    env = {"OPENAI_API_KEY": "sk-1", "OPENAI_ORGANIZATION": "org-abc", "OPENAI_PROJECT": "proj_def"}
    headers = settings(tmp_path, {"provider": "openai"}, **env).endpoint().headers
    assert headers["OpenAI-Organization"] == "org-abc" and headers["OpenAI-Project"] == "proj_def"
