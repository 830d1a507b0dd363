"""The model provider: which one ``auto`` resolves to, and each one's defaults."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

PROVIDERS = ("auto", "openai", "codex", "mock")

DEFAULT_BASE_URLS = {
    "openai": "https://api.openai.com/v1",
    "codex": "https://chatgpt.com/backend-api/codex",
}
MAX_MODEL_CHARS = 256


def codex_home(env: Mapping[str, str]) -> Path:
    return Path(env.get("CODEX_HOME") or Path(env.get("HOME", "~")).expanduser() / ".codex").expanduser()


def codex_auth_has_tokens(home: Path) -> bool:
    """True when ``<CODEX_HOME>/auth.json`` holds a ChatGPT login (read by ``auth_file``, the
    one place that parses that file)."""
    from echsd.codex.auth_file import AuthFileError, read_tokens  # the codex package only when asked

    try:
        read_tokens(home / "auth.json")
    except AuthFileError:
        return False
    return True


def resolve_provider(requested: str, home: Path, api_key: str | None) -> str:
    if requested != "auto":
        return requested
    if codex_auth_has_tokens(home):
        return "codex"
    if api_key:
        return "openai"
    return "mock"
