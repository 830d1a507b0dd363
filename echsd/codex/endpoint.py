"""Where requests go and how they authenticate."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from echsd.codex.auth import ApiKeyAuth, Auth, NoAuth
from echsd.codex.codex_auth import CodexAuth

if TYPE_CHECKING:
    from echsd.settings import Settings


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


def endpoint_from_settings(settings: Settings, base_url: str | None = None) -> Endpoint:
    """The endpoint of the configured provider; ``base_url`` overrides the settings' URL.

    For ``mock`` the caller passes the URL of the mock upstream it started.
    """
    url = base_url or settings.base_url
    if not url:
        raise ValueError(f"provider {settings.provider!r} needs a base URL")
    if settings.provider == "codex":
        return Endpoint(url, CodexAuth(settings.codex_home), {"originator": "echsd"})
    if settings.provider == "openai" and settings.openai_api_key:
        return Endpoint(url, ApiKeyAuth(settings.openai_api_key))
    return Endpoint(url, NoAuth())
