"""Where requests go, how they authenticate, and how echsd introduces itself.

Per provider, as Codex does (openai/codex ``default_client.rs``, ``model_provider_info.rs``):

- ``codex`` (ChatGPT login): ``originator: codex_cli_rs``, ``version: 0.169.0`` and a
  Codex-format User-Agent, ``codex_cli_rs/<version> (<os> <release>; <arch>) echsd/<version>``:
  the ChatGPT backend serves first-party clients and gates models on the client version;
  the last part says truthfully who is calling.
- ``openai`` (and ``mock``): ``originator: echsd``, ``OpenAI-Organization`` /
  ``OpenAI-Project`` from ``OPENAI_ORGANIZATION`` / ``OPENAI_PROJECT`` when set, and
  ``echsd/<version> (<os> <release>; <arch>)``.
- every request of a thread carries ``session-id`` and ``thread-id`` (the thread id; added
  per request by the client) so the backend routes it to the same prompt cache.
"""

from __future__ import annotations

import platform
from dataclasses import dataclass, field
from pathlib import Path

from echsd import __version__
from echsd.codex.auth import ApiKeyAuth, Auth, NoAuth
from echsd.codex.codex_auth import CodexAuth

CODEX_ORIGINATOR = "codex_cli_rs"
ECHSD_ORIGINATOR = "echsd"
CODEX_CLIENT_VERSION = "0.169.0"  # the Codex CLI release whose request shapes echsd follows


@dataclass(frozen=True)
class Endpoint:
    base_url: str  # e.g. https://api.openai.com/v1; requests go to <base_url>/responses
    auth: Auth = field(default_factory=NoAuth)
    headers: dict[str, str] = field(default_factory=dict)  # sent with every request
    provider: str = "openai"  # codex: the ChatGPT backend (no stored responses, its own model list)
    unix_socket: str | None = None  # connect there instead of the URL's host (the built-in mock)

    @property
    def stores_responses(self) -> bool:
        """Whether ``store: true`` (and so ``previous_response_id``) is allowed: not on the
        ChatGPT backend ("Store must be set to false")."""
        return self.provider != "codex"

    @property
    def models_url(self) -> str:
        """The model list: the API's ``GET /models``; the backend's as Codex asks it."""
        url = self.base_url.rstrip("/") + "/models"
        return f"{url}?client_version={CODEX_CLIENT_VERSION}" if self.provider == "codex" else url

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


def provider_headers(provider: str, organization: str | None = None, project: str | None = None) -> dict[str, str]:
    headers = {"User-Agent": user_agent(provider)}
    if provider == "codex":
        headers["originator"] = CODEX_ORIGINATOR
        headers["version"] = CODEX_CLIENT_VERSION  # the backend gates models on the client's version
    else:
        headers["originator"] = ECHSD_ORIGINATOR
    if provider == "openai":
        if organization:
            headers["OpenAI-Organization"] = organization
        if project:
            headers["OpenAI-Project"] = project
    return headers


def make_endpoint(
    provider: str,
    base_url: str | None,
    *,
    codex_home: Path,
    api_key: str | None = None,
    organization: str | None = None,
    project: str | None = None,
    unix_socket: str | None = None,
) -> Endpoint:
    """The endpoint of a provider (``codex``, ``openai`` or ``mock``) at ``base_url``.

    For ``mock`` the caller passes the URL and unix socket of the mock upstream it started.
    """
    if not base_url:
        raise ValueError(f"provider {provider!r} needs a base URL")
    headers = provider_headers(provider, organization, project)
    if provider == "codex":
        return Endpoint(base_url, CodexAuth(codex_home), headers, provider, unix_socket)
    if provider == "openai" and api_key:
        return Endpoint(base_url, ApiKeyAuth(api_key), headers, provider, unix_socket)
    return Endpoint(base_url, NoAuth(), headers, provider, unix_socket)
