"""The web door's defences, from outside over real HTTP: sessions, CSRF tokens, Origin and
Host checks, one-time login codes, revocation; and the native wire still refusing any
Origin (the web view has a door of its own)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import trio
from trio_websocket import ConnectionRejected, open_websocket_url

from tests.cli.helpers import echs_async
from tests.web.conftest import Browser, log_in, origin_of


async def _thread(daemon: Any, workdir: Any) -> str:
    return str((await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"])


async def test_the_api_refuses_a_request_without_a_session(web_daemon: Any, workdir: Any) -> None:
    tid = await _thread(web_daemon, workdir)
    origin = origin_of(web_daemon)
    async with httpx.AsyncClient(base_url=origin) as http:
        for method, path in [("GET", "/api/threads"), ("GET", f"/api/threads/{tid}"), ("GET", "/api/approvals"), ("GET", "/api/stream"),
                             ("GET", f"/api/threads/{tid}/stream"), ("GET", "/api/session"), ("GET", "/api/blackboard")]:  # fmt: skip
            answer = await http.request(method, path)
            assert answer.status_code == 401, (path, answer.text)
            assert answer.json()["error"]["code"] == "unauthorized" and "echs web" in answer.json()["error"]["message"]
        answer = await http.post(f"/api/threads/{tid}/send", json={"text": "hi"}, headers={"Origin": origin, "Cookie": "echsd_session_1=x"})
        assert answer.status_code == 401
        forged = f"echsd_session_{web_daemon.web.listener.port}"
        answer = await http.get("/api/threads", headers={"Cookie": f"{forged}=not-a-session"})
        assert answer.status_code == 401
    assert (await web_daemon.ops.get_thread(tid))["usage"]["turns"] == 0


async def test_a_change_needs_the_session_s_csrf_token(web_daemon: Any, browser: Browser, workdir: Any) -> None:
    tid = await _thread(web_daemon, workdir)
    for token in ("", "wrong", browser.csrf[:-1] + ("A" if browser.csrf[-1] != "A" else "B")):
        answer = await browser.http.post(f"/api/threads/{tid}/send", json={"text": "hi"}, headers={"Origin": browser.origin, "X-Echsd-Csrf": token})
        assert answer.status_code == 403 and "CSRF" in answer.json()["error"]["message"], token
        answer = await browser.http.post(f"/api/threads/{tid}/pause", json={}, headers={"Origin": browser.origin, "X-Echsd-Csrf": token})
        assert answer.status_code == 403
    assert (await web_daemon.ops.get_thread(tid))["state"] == "idle"
    assert (await web_daemon.ops.get_thread(tid))["usage"]["turns"] == 0
    answer = await browser.post(f"/api/threads/{tid}/send", {"text": "hi"})
    assert answer.status_code == 200 and answer.json()["disposition"] == "started"


async def test_a_foreign_origin_is_refused(web_daemon: Any, browser: Browser, workdir: Any) -> None:
    tid = await _thread(web_daemon, workdir)
    for origin in ("http://evil.example", "null", browser.origin.replace("127.0.0.1", "localhost") + "0", "https://" + browser.origin.split("://")[1]):
        answer = await browser.post(f"/api/threads/{tid}/send", {"text": "hi"}, Origin=origin)
        assert answer.status_code == 403 and "cross-origin" in answer.json()["error"]["message"], origin
        answer = await browser.http.get("/api/threads", headers={"Origin": origin})
        assert answer.status_code == 403
    answer = await browser.http.post(f"/api/threads/{tid}/send", json={"text": "hi"}, headers={"X-Echsd-Csrf": browser.csrf})
    assert answer.status_code == 403 and "Origin" in answer.json()["error"]["message"]  # a change without one
    answer = await browser.http.get("/api/threads", headers={"Sec-Fetch-Site": "cross-site"})
    assert answer.status_code == 403
    code = (await web_daemon.ops.web_login())["url"].split("#login=")[1]
    answer = await browser.http.post("/api/login", json={"code": code}, headers={"Origin": "http://evil.example"})
    assert answer.status_code == 403
    assert (await web_daemon.ops.get_thread(tid))["usage"]["turns"] == 0


async def test_a_foreign_host_is_refused(web_daemon: Any, browser: Browser) -> None:
    """DNS rebinding: a page of evil.example resolving to 127.0.0.1 reaches the port under its own name."""
    port = web_daemon.web.listener.port
    for host in (f"evil.example:{port}", "evil.example", f"127.0.0.1:{port + 1}", f"127.0.0.2:{port}", ""):
        for path in ("/", "/api/threads", "/metrics", "/static/app.js"):
            answer = await browser.http.get(path, headers={"Host": host})
            assert answer.status_code == 403 and "Host" in answer.json()["error"]["message"], (host, path)
    for host in (f"127.0.0.1:{port}", f"localhost:{port}"):
        assert (await browser.http.get("/api/threads", headers={"Host": host, "Origin": f"http://{host}"})).status_code == 200


async def test_a_used_or_expired_login_code_is_refused(web_daemon: Any) -> None:
    origin = origin_of(web_daemon)
    async with httpx.AsyncClient(base_url=origin) as http:
        code = (await web_daemon.ops.web_login())["url"].split("#login=")[1]
        first = await http.post("/api/login", json={"code": code}, headers={"Origin": origin})
        assert first.status_code == 200
        cookie = first.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
        again = await http.post("/api/login", json={"code": code}, headers={"Origin": origin})
        assert again.status_code == 401 and "used, expired" in again.json()["error"]["message"]
        stale = (await web_daemon.ops.web_login())["url"].split("#login=")[1]
        await trio.sleep(1.2)  # past web_login_code_s (1 s here): time passing is the point
        expired = await http.post("/api/login", json={"code": stale}, headers={"Origin": origin})
        assert expired.status_code == 401
        for bogus in ("", "x" * 43, None, 7):
            assert (await http.post("/api/login", json={"code": bogus}, headers={"Origin": origin})).status_code == 401


async def test_revoke_ends_every_session_and_its_streams(web_daemon: Any, browser: Browser, workdir: Any) -> None:
    assert (await browser.http.get("/api/session")).status_code == 200
    async with browser.http.stream("GET", "/api/stream") as stream:
        lines = stream.aiter_lines()
        with trio.fail_after(10):
            assert (await anext(lines)).startswith("data: ")  # the snapshot
        revoked = await echs_async(web_daemon.settings.state_dir, "web", "--revoke", "--json")
        assert revoked.returncode == 0 and json.loads(revoked.stdout)["sessions"] == 1
        with trio.fail_after(10):
            async for _line in lines:  # the stream ends at once
                pass
    assert (await browser.http.get("/api/session")).status_code == 401
    assert (await browser.post("/api/logout", {})).status_code == 401
    csrf = await log_in(web_daemon, browser.http)  # a new link works again
    assert (await browser.http.get("/api/session")).json()["csrf"] == csrf


async def test_the_native_token_never_reaches_the_browser(web_daemon: Any, browser: Browser, workdir: Any) -> None:
    token = web_daemon.settings.token_path.read_text().strip()
    tid = await _thread(web_daemon, workdir)
    seen = []
    for path in ("/", "/static/app.js", "/static/app.css", "/api/session", "/api/threads", f"/api/threads/{tid}", f"/api/threads/{tid}/why", "/metrics"):
        answer = await browser.http.get(path)
        assert answer.status_code == 200, path
        seen.append(answer.text + str(answer.headers))
    assert token and not any(token in text for text in seen)


async def test_the_native_wire_still_refuses_any_origin(web_daemon: Any, tmp_path: Any, nursery: Any) -> None:
    """The web view's own origin included: browsers use the web door, never the wire."""
    from echsd.daemon import Daemon
    from tests.cli.helpers import free_port
    from tests.helpers import make_settings

    port = free_port()
    state = tmp_path / "wire"
    daemon = Daemon(make_settings(state, None, listen=[f"tcp://127.0.0.1:{port}"]))
    await nursery.start(daemon.run)
    try:
        for origin in (origin_of(web_daemon), f"http://127.0.0.1:{port}", "http://evil.example"):
            with pytest.raises(ConnectionRejected) as refused:
                async with open_websocket_url(f"ws://127.0.0.1:{port}/v1", extra_headers=[("Origin", origin)]):
                    pass
            assert refused.value.status_code == 403
    finally:
        daemon.request_stop()
        await daemon.wait_stopped()


async def test_echs_web_prints_a_link_and_says_when_there_is_no_web_view(web_daemon: Any, tmp_path: Any, nursery: Any) -> None:
    from echsd.daemon import Daemon
    from tests.helpers import make_settings

    printed = await echs_async(web_daemon.settings.state_dir, "web", "--no-open")
    assert printed.returncode == 0
    text = printed.stdout.decode()
    assert f"{origin_of(web_daemon)}/#login=" in text and "works once" in text
    plain = Daemon(make_settings(tmp_path / "plain", None))
    await nursery.start(plain.run)
    try:
        refused = await echs_async(tmp_path / "plain", "web")
        assert refused.returncode == 1 and "--web tcp://127.0.0.1:PORT" in refused.stderr.decode()
    finally:
        plain.request_stop()
        await plain.wait_stopped()
