"""The model provider: which one ``auto`` resolves to, and each one's defaults."""

from __future__ import annotations

from urllib.parse import urlsplit

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


def url_problem(value: object) -> str | None:
    """Why ``value`` is no usable endpoint URL (``--base-url``), or None: an http(s) URL
    with a host and, if any, a numeric port, and nothing a request line cannot carry."""
    if not isinstance(value, str) or not value.startswith(("http://", "https://")):
        return "it must start with http:// or https://"
    if any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in value):
        return "it contains spaces or control characters"
    try:
        parts = urlsplit(value)
    except ValueError as exc:
        return f"not a valid URL: {exc}"
    host, colon, port_text = parts.netloc.rpartition("@")[2].rpartition(":")
    if colon and not host.endswith("]") and "]" not in port_text:
        if not port_text.isdigit():
            return f"port {port_text!r} is not a number"
        if not 1 <= int(port_text) <= 65535:
            return f"port {port_text} is out of range (1-65535)"
    try:
        parts.port  # noqa: B018 -- raises ValueError for anything else urlsplit cannot take
    except ValueError as exc:
        return f"not a valid URL: {exc}"
    if not parts.hostname:
        return "it has no host"
    if parts.query or parts.fragment:
        return "a base URL has no ?query or #fragment"
    return None
