"""The web door's ASGI app: the page, its JSON API and live streams, and ``/metrics``.

Every request is checked in this order (``guard``): the ``Host`` names this listener; an
``Origin``, where present, is the view's own (and a request that changes something has
one); then, for the API, a live session cookie, and for a change, the session's CSRF token.
Only the page's files, ``/metrics`` and the login itself are served without a session.

The routes, in one table (``ROUTES``): ``GET /`` and ``/static/*`` (the page, shipped in
the package), ``POST /api/login`` (a one-time code for a session), ``GET /api/session``,
``POST /api/logout``, the threads (``/api/threads[/ID[/why|/events|/earlier|/stream|/send|/ACTION]]``),
``/api/approvals[/ID]``, ``/api/blackboard``, ``/api/stream`` (the overview) and
``GET /metrics``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from typing import Any, Awaitable, Callable

from echsd.errors import EchsError
from echsd.logs import get_logger
from echsd.metrics import render
from echsd.web import api
from echsd.web.context import WebContext
from echsd.web.guard import check_csrf, check_host, check_origin, clear_cookie, set_cookie
from echsd.web.http import HttpError, HttpRequest, Receive, Send, error_response, json_response, respond, status_of
from echsd.web.sessions import LoginRefused, WebSession
from echsd.web.streams import SseShell, overview_stream, thread_stream
from echsd.web.tail import earlier, tail_events, tail_since

log = get_logger(__name__)

STATIC_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8",
                ".svg": "image/svg+xml", ".txt": "text/plain; charset=utf-8"}  # fmt: skip


def load_static() -> dict[str, tuple[bytes, str]]:
    """The page's files (shipped in the package), by name, with their content types."""
    files: dict[str, tuple[bytes, str]] = {}
    for entry in resources.files("echsd.web").joinpath("static").iterdir():
        suffix = "." + entry.name.rsplit(".", 1)[-1]
        if entry.is_file() and suffix in STATIC_TYPES:
            files[entry.name] = (entry.read_bytes(), STATIC_TYPES[suffix])
    return files


PUBLIC, LOGIN, API, OWN = "public", "login", "api", "own"
Raw = Callable[["WebApp", HttpRequest, Send, WebSession | None], Awaitable[None]]


@dataclass(frozen=True)
class Route:
    method: str
    pattern: re.Pattern[str]
    kind: str  # PUBLIC and LOGIN: no session; API: a JSON handler (``api``); OWN: a raw one, with the session
    handler: Any  # api.Handler for API, Raw otherwise


def route(method: str, path: str, kind: str, handler: Any) -> Route:
    return Route(method, re.compile(path + r"\Z"), kind, handler)


ID = r"(?P<thread_id>[A-Za-z0-9_]{1,64})"


class WebApp:
    def __init__(self, context: WebContext, *, page: bool = True) -> None:
        """``page`` False: ``/metrics`` alone (``--metrics``)."""
        self.context = context
        self.static = load_static() if page else {}
        self.routes = ROUTES if page else [r for r in ROUTES if r.pattern.pattern.startswith("/metrics")]

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        request = HttpRequest.from_scope(scope, receive)
        try:
            await self._serve(request, send)
        except HttpError as exc:
            await error_response(send, exc.status, exc.code, exc.message)
        except EchsError as exc:
            await error_response(send, status_of(exc), exc.code, exc.message)
        except Exception as exc:  # a bug answers this request, nothing more
            log.exception("web request failed", method=request.method, path=request.path)
            await error_response(send, 500, "internal", f"internal error ({type(exc).__name__}); see the daemon log")

    async def _serve(self, request: HttpRequest, send: Send) -> None:
        context = self.context
        guard = request.guard
        refusal = check_host(guard, context.hosts)
        if refusal is None:
            found = self._match(request)
            refusal = check_origin(guard, api=found.kind != PUBLIC)
        if refusal is not None:
            log.info("web request refused", status=refusal.status, reason=refusal.reason, path=request.path)
            raise HttpError(refusal.status, "forbidden", refusal.reason)
        session: WebSession | None = None
        if found.kind in (API, OWN):
            session = context.sessions.find(guard.cookie(context.cookie))
            if session is None:
                raise HttpError(401, "unauthorized", "not logged in (or the session ended): run `echs web` and open the link it prints")
            refusal = check_csrf(guard, session.csrf)
            if refusal is not None:
                raise HttpError(refusal.status, "forbidden", refusal.reason)
        if found.kind == API:
            await json_response(send, await found.handler(context, request))
        else:
            await found.handler(self, request, send, session)

    def _match(self, request: HttpRequest) -> Route:
        allowed = False
        for each in self.routes:
            match = each.pattern.match(request.path)
            if match is None:
                continue
            if each.method != request.method and not (each.method == "GET" and request.method == "HEAD"):
                allowed = True
                continue
            request.params = match.groupdict()
            return each
        if allowed:
            raise HttpError(405, "method_not_allowed", f"{request.method} is not served at {request.path}")
        raise HttpError(404, "not_found", f"nothing at {request.path}")

    # ---- the raw handlers -------------------------------------------------------------------

    async def page(self, request: HttpRequest, send: Send, session: WebSession | None) -> None:
        await self._file(send, "index.html")

    async def static_file(self, request: HttpRequest, send: Send, session: WebSession | None) -> None:
        await self._file(send, request.params["name"])

    async def _file(self, send: Send, name: str) -> None:
        found = self.static.get(name)
        if found is None:
            raise HttpError(404, "not_found", f"no file {name}")
        body, content_type = found
        await respond(send, 200, body, content_type, [("cache-control", "no-cache")])

    async def metrics(self, request: HttpRequest, send: Send, session: WebSession | None) -> None:
        if self.context.metrics is None:
            raise HttpError(404, "not_found", "metrics are off")
        body, content_type = render(self.context.metrics, request.headers.get("accept", ""))
        await respond(send, 200, body, content_type, [("cache-control", "no-store")])

    async def login(self, request: HttpRequest, send: Send, session: WebSession | None) -> None:
        context = self.context
        code = (await request.json()).get("code")
        try:
            token, opened = context.sessions.redeem(code if isinstance(code, str) else "")
        except LoginRefused as exc:
            log.info("web login refused", reason=str(exc))
            raise HttpError(401, "unauthorized", str(exc)) from None
        log.info("web login", sessions=len(context.sessions))
        cookie = set_cookie(context.cookie, token, context.sessions.session_s)
        await json_response(send, self._session_answer(opened), headers=[("set-cookie", cookie)])

    async def session(self, request: HttpRequest, send: Send, session: WebSession | None) -> None:
        assert session is not None
        await json_response(send, self._session_answer(session))

    async def logout(self, request: HttpRequest, send: Send, session: WebSession | None) -> None:
        context = self.context
        context.sessions.end(request.guard.cookie(context.cookie))
        await json_response(send, {"logged_out": True}, headers=[("set-cookie", clear_cookie(context.cookie))])

    def _session_answer(self, session: WebSession) -> dict[str, Any]:
        return {"csrf": session.csrf, "expires_in_s": round(self.context.sessions.expires_in(session), 3)}

    async def thread_events(self, request: HttpRequest, send: Send, session: WebSession | None) -> None:
        """``GET /api/threads/ID/stream?since=N``: replay after N (or after the browser's
        ``Last-Event-ID`` when it reconnects), then live. ``?tail=M`` without either: from
        the thread's last M events (``tail``), the ``subscribed`` message saying after
        which seq."""
        assert session is not None
        thread_id = request.params["thread_id"]
        thread = await api.thread(self.context, request)  # 404 before the stream starts
        since = request.int_query("since")
        last = request.headers.get("last-event-id", "").strip()
        if last.isdigit() and len(last) < 19:
            since = int(last)
        elif since is None and "tail" in request.query:
            since = await tail_since(self.context, thread_id, thread["last_seq"] + 1, tail_events(request, "tail"))
        if since is not None and since > thread["last_seq"]:  # 400 now: a browser would retry a stream that ends
            raise HttpError(400, "bad_request", f"since {since} is beyond the thread's last seq ({thread['last_seq']})")
        shell = SseShell(self.context, session, send, request.receive)
        await thread_stream(self.context, shell, thread_id, since)

    async def overview(self, request: HttpRequest, send: Send, session: WebSession | None) -> None:
        assert session is not None
        await overview_stream(self.context, SseShell(self.context, session, send, request.receive))


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


ROUTES: list[Route] = [
    route("GET", "/", PUBLIC, WebApp.page),
    route("GET", r"/static/(?P<name>[A-Za-z0-9_.-]{1,64})", PUBLIC, WebApp.static_file),
    route("GET", "/metrics", PUBLIC, WebApp.metrics),
    route("POST", "/api/login", LOGIN, WebApp.login),
    route("GET", "/api/session", OWN, WebApp.session),
    route("POST", "/api/logout", OWN, WebApp.logout),
    route("GET", "/api/stream", OWN, WebApp.overview),
    route("GET", "/api/threads", API, api.threads),
    route("GET", "/api/tree", API, api.tree),
    route("GET", f"/api/threads/{ID}", API, api.thread),
    route("GET", f"/api/threads/{ID}/why", API, api.why),
    route("GET", f"/api/threads/{ID}/events", API, api.events),
    route("GET", f"/api/threads/{ID}/stream", OWN, WebApp.thread_events),
    route("GET", f"/api/threads/{ID}/earlier", API, earlier),
    route("POST", f"/api/threads/{ID}/send", API, api.send),
    route("POST", f"/api/threads/{ID}/(?P<action>interrupt|pause|resume|kill)", API, api.control),
    route("GET", "/api/approvals", API, api.approvals),
    route("POST", r"/api/approvals/(?P<request_id>[A-Za-z0-9_.:-]{1,128})", API, api.decide),
    route("GET", "/api/blackboard", API, api.blackboard),
]
