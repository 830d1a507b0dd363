"""A real in-process daemon with the web view (``--web``) and a metrics listener
(``--metrics``) on loopback ports of their own, and a logged-in HTTP session."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, AsyncIterator

import httpx
import pytest

from tests.helpers import make_settings


@pytest.fixture
async def web_daemon(tmp_path: Any, mock_upstream: Any, nursery: Any) -> AsyncIterator[Any]:
    from echsd.daemon import Daemon

    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "config.toml").write_text("[tuning]\nweb_login_code_s = 1.0\n")
    daemon = Daemon(make_settings(state, mock_upstream.base_url, web="tcp://127.0.0.1:0", metrics="tcp://127.0.0.1:0"))
    await nursery.start(daemon.run)
    yield daemon
    daemon.request_stop()
    await daemon.wait_stopped()


@dataclass
class Browser:
    """What a logged-in page holds: its origin, its cookie jar, its CSRF token."""

    http: httpx.AsyncClient
    origin: str
    csrf: str

    async def post(self, path: str, body: Any, **headers: str) -> httpx.Response:
        sent = {"Origin": self.origin, "X-Echsd-Csrf": self.csrf, **headers}
        return await self.http.post(path, json=body, headers={k: v for k, v in sent.items() if v})


def origin_of(daemon: Any) -> str:
    return daemon.web.url.rstrip("/")


async def log_in(daemon: Any, http: httpx.AsyncClient) -> str:
    """Trade a fresh ``web.login`` code for a session (as the page does); the CSRF token."""
    url = (await daemon.ops.web_login())["url"]
    code = url.split("#login=", 1)[1]
    answer = await http.post("/api/login", json={"code": code}, headers={"Origin": origin_of(daemon)})
    assert answer.status_code == 200, answer.text
    return str(answer.json()["csrf"])


@pytest.fixture
async def browser(web_daemon: Any) -> AsyncIterator[Browser]:
    async with httpx.AsyncClient(base_url=origin_of(web_daemon), timeout=15) as http:
        csrf = await log_in(web_daemon, http)
        yield Browser(http, origin_of(web_daemon), csrf)
