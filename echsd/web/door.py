"""``echsd serve --web tcp://127.0.0.1:PORT`` and ``--metrics tcp://...``: HTTP doors of
the daemon, served by hypercorn's trio worker on sockets bound at start.

``HttpListener`` is one bound socket and its server: bound first thing at start-up (a port
in use stops the daemon with one line), served once the daemon's parts exist, closed when
it stops (open streams get ``GRACE_S``). ``WebDoor`` is the web view's (it also answers
``web.login``/``web.revoke`` for ``echs web``); ``--metrics`` is a bare listener serving
``WebApp(page=False)``: ``/metrics`` alone.
"""

from __future__ import annotations

import os
import socket
from functools import partial
from typing import Any

import trio

from echsd.errors import EchsError
from echsd.logs import get_logger
from echsd.settings import ListenAddress, Settings
from echsd.web.app import WebApp
from echsd.web.context import WebContext
from echsd.web.guard import WILDCARDS, allowed_hosts
from echsd.web.sessions import WebSessions

log = get_logger(__name__)

GRACE_S = 1.0


class HttpListener:
    def __init__(self, address: ListenAddress, what: str) -> None:
        self.address = address
        self.what = what  # for messages: "the web view", "metrics"
        self.socket: socket.socket | None = None
        self._stop = trio.Event()

    @property
    def port(self) -> int:
        assert self.socket is not None
        return int(self.socket.getsockname()[1])

    @property
    def host(self) -> str:
        """The listener's name for a URL (a wildcard address: this machine's name)."""
        host = self.address.host or "127.0.0.1"
        if host in WILDCARDS:
            host = socket.gethostname()
        return f"[{host}]" if ":" in host else host

    def bind(self) -> None:
        """Bind now (at start): a port in use fails the start, naming it."""
        address = self.address
        family = socket.AF_INET6 if ":" in (address.host or "") else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((address.host, address.port))
            sock.listen(128)
        except OSError as exc:
            sock.close()
            raise EchsError(f"cannot listen for {self.what} on {address}: {exc.strerror or exc}") from None
        self.socket = sock

    async def serve(self, app: Any, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        from hypercorn.config import Config
        from hypercorn.trio import serve

        assert self.socket is not None
        config = Config()
        config.bind = [f"fd://{os.dup(self.socket.fileno())}"]  # hypercorn closes the one it gets; ours stays ours
        config.accesslog = None
        config.errorlog = None
        config.graceful_timeout = GRACE_S
        config.keep_alive_timeout = 75  # a page's API calls reuse their connection
        async with trio.open_nursery() as nursery:
            await nursery.start(partial(serve, app, config, shutdown_trigger=self._stop.wait))
            task_status.started()

    def stop_accepting(self) -> None:
        self._stop.set()

    def close(self) -> None:
        if self.socket is not None:
            self.socket.close()
            self.socket = None


class WebDoor:
    """The web view's listener (``--web``), and its logins."""

    def __init__(self, settings: Settings) -> None:
        assert settings.web is not None
        tuning = settings.tuning
        self.settings = settings
        self.listener = HttpListener(settings.web, "the web view")
        self.sessions = WebSessions(code_s=tuning.web_login_code_s, session_s=tuning.web_session_s, idle_s=tuning.web_idle_s)
        self.context: WebContext | None = None

    @property
    def url(self) -> str:
        return f"http://{self.listener.host}:{self.listener.port}/"

    def hosts(self) -> frozenset[str]:
        return allowed_hosts(self.settings.web, self.listener.port)  # type: ignore[arg-type]

    def login(self) -> dict[str, Any]:
        """``web.login``: the view's URL with a fresh one-time code in its fragment (which
        the browser never sends to a server: the page posts it once)."""
        code = self.sessions.new_code()
        log.info("web login link made", expires_in_s=self.sessions.code_s)
        return {"url": f"{self.url}#login={code}", "expires_in_s": self.sessions.code_s}

    def revoke(self) -> dict[str, int]:
        """``web.revoke``: end every session; their open streams end now."""
        ended = self.sessions.revoke()
        if self.context is not None:
            self.context.revoked.set()
            self.context.revoked = trio.Event()
        log.info("web sessions revoked", **ended)
        return ended

    async def serve(self, context: WebContext, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        self.context = context
        await self.listener.serve(WebApp(context), task_status=task_status)
