"""Where requests go, how they authenticate, and how echsd introduces itself.

Per provider, as Codex does (openai/codex ``default_client.rs``, ``model_provider_info.rs``):

- ``codex`` (ChatGPT login): ``originator: codex_cli_rs`` and a Codex-format User-Agent,
  ``codex_cli_rs/<version> (<os> <release>; <arch>) echsd/<version>``: the ChatGPT backend
  serves first-party clients and gates models on the client version; the last part says
  truthfully who is calling.
- ``openai``: ``OpenAI-Organization`` / ``OpenAI-Project`` from ``OPENAI_ORGANIZATION`` /
  ``OPENAI_PROJECT`` when set, and ``echsd/<version> (<os> <release>; <arch>)``.
- every request of a thread carries ``session_id: <thread id>`` (added per request by the
  client) so the backend routes it to the same prompt cache.
"""

from __future__ import annotations

import platform
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from echsd import __version__
from echsd.codex.auth import ApiKeyAuth, Auth, NoAuth
from echsd.codex.codex_auth import CodexAuth

if TYPE_CHECKING:
    from echsd.settings import Settings

CODEX_ORIGINATOR = "codex_cli_rs"
CODEX_CLIENT_VERSION = "0.169.0"  # the Codex CLI release whose request shapes echsd follows


@dataclass(frozen=True)
class Endpoint:
    base_url: str  # e.g. https://api.openai.com/v1; requests go to <base_url>/responses
    auth: Auth = field(default_factory=NoAuth)
    headers: dict[str, str] = field(default_factory=dict)  # sent with every request

    @property
    def responses_url(self) -> str:
        return self.base_url.rstrip("/") + "/responses"

    @property
    def compact_url(self) -> str:
        return self.base_url.rstrip("/") + "/responses/compact"


def _platform() -> str:
    system = platform.system() or "unknown"
    return f"{system} {platform.release() or 'unknown'}; {platform.machine() or 'unknown'}"


def user_agent(provider: str) -> str:
    """The User-Agent of a provider (printable ASCII only, as a header must be)."""
    echsd = f"echsd/{__version__}"
    if provider == "codex":
        agent = f"{CODEX_ORIGINATOR}/{CODEX_CLIENT_VERSION} ({_platform()}) {echsd}"
    else:
        agent = f"{echsd} ({_platform()})"
    return "".join(ch if " " <= ch <= "~" else "_" for ch in agent)


def provider_headers(settings: Settings) -> dict[str, str]:
    headers = {"User-Agent": user_agent(settings.provider)}
    if settings.provider == "codex":
        headers["originator"] = CODEX_ORIGINATOR
    if settings.provider == "openai":
        if settings.openai_organization:
            headers["OpenAI-Organization"] = settings.openai_organization
        if settings.openai_project:
            headers["OpenAI-Project"] = settings.openai_project
    return headers


def endpoint_from_settings(settings: Settings, base_url: str | None = None) -> Endpoint:
    """The endpoint of the configured provider; ``base_url`` overrides the settings' URL.

    For ``mock`` the caller passes the URL of the mock upstream it started.
    """
    url = base_url or settings.base_url
    if not url:
        raise ValueError(f"provider {settings.provider!r} needs a base URL")
    headers = provider_headers(settings)
    if settings.provider == "codex":
        return Endpoint(url, CodexAuth(settings.codex_home), headers)
    if settings.provider == "openai" and settings.openai_api_key:
        return Endpoint(url, ApiKeyAuth(settings.openai_api_key), headers)
    return Endpoint(url, NoAuth(), headers)
