"""One MCP server, supervised: started on first use, restarted with backoff, stopped with the daemon.

Theory of operation. A runner task owns the server's connection (an SDK ``Client`` over a
transport, ``transport.py``) and nothing else touches it but the calls it serves. States:

    idle -> starting -> ready -> (the server exits, or a restart is asked) -> backoff -> starting ...
                    \\-> (start fails or times out) -> backoff

``disabled`` servers never start. Starting means spawning (or connecting), the initialize
handshake and listing the tools, all within ``startup_timeout_s``. A server that dies is
started again after a delay that doubles from ``BACKOFF_MIN_S`` to ``BACKOFF_MAX_S`` (and
falls back to the minimum once a session stayed up ``STABLE_S``), so a crash costs the next
call a short wait while a crash loop costs little. ``restart`` starts it again at once.

Waiting is always bounded: a call waits for a starting server at most its startup timeout;
one that finds the server in backoff, its next attempt further away than that, asks for one
attempt now (the server may be back: a call should not fail on a timer), and fails with the
last error if that attempt does too (listing the tools before a model request never asks).
A ``notifications/tools/list_changed`` marks the tool list stale the moment it arrives
(before the response that follows it); the next model request lists the tools again first
(``refresh``).

The handshake is the 2025 one (``initialize``), which every server speaks: the SDK's servers
serve it beside the 2026 revision, and so do the servers Codex users run.
"""

from __future__ import annotations

import math
import os
import time
from contextlib import AsyncExitStack
from typing import Any, Awaitable, Callable

import mcp_types
import trio
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage

from echsd import __version__
from echsd.logs import get_logger
from echsd.mcp.config import McpServerConfig
from echsd.mcp.confine import UNCONFINED, SandboxRefused
from echsd.mcp.confine import describe as describe_sandbox
from echsd.mcp.transport import Confine, TransportError, http_transport, stdio_transport, tapped
from echsd.tools.sandbox.policy import SandboxPolicy

log = get_logger(__name__)

BACKOFF_MIN_S = 0.25
BACKOFF_MAX_S = 60.0
STABLE_S = 30.0  # up this long, a session's end restarts it after the minimum delay again
MAX_TOOL_PAGES = 100  # tools/list pages read (a paginator that never ends cannot hang a start)
LIST_CHANGED = "notifications/tools/list_changed"
MAX_LAST_WORDS = 300  # of a server's last stderr line, in its last error

Progress = Callable[[float, float | None, str | None], Awaitable[None]]


class ServerDown(Exception):
    """The server is not there to call; the message says why (for the model and ``echs``)."""


class CallFailed(Exception):
    """A call that reached the server and got no result; the message says why."""


def describe(exc: BaseException) -> str:
    """One line for an exception, its innermost cause for a group."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, MCPError):
        return exc.error.message
    text = str(exc) or type(exc).__name__
    return text if isinstance(exc, (TransportError, ServerDown, SandboxRefused)) else f"{type(exc).__name__}: {text}"


class McpSession:
    def __init__(self, config: McpServerConfig, cwd: str, confine: Confine | None = None) -> None:
        self.config = config
        self.cwd = cwd  # where a stdio server without ``cwd`` runs: the daemon's directory
        self._confine = confine
        self.sandbox: str | None = None  # a stdio server's sandbox, once it was started
        self._last_words: str | None = None  # the last line its current process wrote on stderr
        self.state = "idle" if config.enabled else "disabled"
        self.tools: list[mcp_types.Tool] = []  # as listed, filtered by enabled/disabled_tools
        self.server_info: dict[str, Any] | None = None  # what the server said of itself at its last start
        self.capabilities: dict[str, Any] | None = None
        self.tools_version = 0  # bumped whenever ``tools`` changes
        self.last_error: str | None = None
        self.restarts = 0  # sessions started after the first
        self.up_since: float | None = None  # wall clock, while ready
        self.next_attempt: float | None = None  # trio clock, while in backoff
        self._client: Client | None = None
        self._stale = False
        self._changed = trio.Event()
        self._lost = trio.Event()
        self._kick = trio.Event()  # a restart was asked
        self._wake = trio.Event()  # try again now, not when the backoff's delay ends
        self._attempt_scope: trio.CancelScope | None = None
        self._listing = trio.Lock()
        self._attempts = 0
        self._delay = BACKOFF_MIN_S

    @property
    def name(self) -> str:
        return self.config.name

    def status(self) -> dict[str, Any]:
        """One server as ``echs mcp ls`` and ``mcpServerStatus/list`` show it."""
        return {
            "name": self.name,
            **self.config.describe(),
            "state": self.state,
            "tools": [tool.name for tool in self.tools],
            "last_error": self.last_error,
            "restarts": self.restarts,
            "up_since": self.up_since,
            "sandbox": self.sandbox,
        }

    def _closing(self, state: str = "backoff") -> None:
        """The session is over (the server exited, or it is being restarted: ``starting``):
        calls now wait for the next one while this one is torn down."""
        self._client = None
        self.up_since = None
        if self.state == "ready":
            self._set(state)

    def _set(self, state: str) -> None:
        self.state = state
        self._changed.set()
        self._changed = trio.Event()

    # ---- the runner ------------------------------------------------------------------------

    async def run(self) -> None:
        """Keep the server up until cancelled (the daemon stopping)."""
        try:
            while True:
                began = trio.current_time()
                await self._attempt()
                kicked = self._kick.is_set()
                self._kick, self._wake = trio.Event(), trio.Event()
                if kicked:  # a restart: at once, from the shortest delay (no backoff shown)
                    self._delay = BACKOFF_MIN_S
                    continue
                if trio.current_time() - began >= STABLE_S:
                    self._delay = BACKOFF_MIN_S
                delay, self._delay = self._delay, min(self._delay * 2, BACKOFF_MAX_S)
                self.next_attempt = trio.current_time() + delay
                self._set("backoff")
                with trio.move_on_after(delay):
                    await self._wake.wait()
                if self._kick.is_set():  # a restart asked during the wait: start afresh
                    self._kick, self._delay = trio.Event(), BACKOFF_MIN_S
                self.next_attempt = None
        finally:
            self._client = None
            self.up_since = None
            self._set("stopped")

    async def _attempt(self) -> None:
        self._attempts += 1
        if self._attempts > 1:
            self.restarts += 1
        self._lost = trio.Event()
        self._last_words = None
        self._set("starting")
        timeout = self.config.startup_timeout_s
        with trio.CancelScope(deadline=trio.current_time() + timeout) as scope:
            self._attempt_scope = scope
            try:
                async with AsyncExitStack() as stack:
                    client = await stack.enter_async_context(self._open())
                    tools = await self._list(client)
                    scope.deadline = math.inf
                    self._note_server(client)
                    self._client, self._stale = client, False
                    self._take_tools(tools)
                    self.last_error = None
                    self.up_since = time.time()
                    self._set("ready")
                    log.info("mcp server ready", server=self.name, tools=len(self.tools))
                    await self._lost.wait()
                    self.last_error = "the server exited" if self.config.transport == "stdio" else "the connection to the server was lost"
                    self._closing()
            except Exception as exc:
                failed_to_run = isinstance(exc, (TransportError, SandboxRefused))  # it never ran: nothing to add
                self.last_error = describe(exc) + ("" if failed_to_run else self._hints(starting=self.state == "starting"))
            finally:
                self._client = None
                self.up_since = None
                self._attempt_scope = None
        if scope.cancelled_caught and self._kick.is_set():
            self.last_error = None
        elif scope.cancelled_caught and self.last_error is None:
            self.last_error = f"it did not start within {timeout:g} s (startup_timeout_sec)"
        if self.last_error == "the server exited":
            self.last_error += self._hints(starting=False)
        if self.last_error is not None:
            log.warning("mcp server down", server=self.name, error=self.last_error)

    def _hints(self, starting: bool) -> str:
        """What may say why a stdio server failed: its last stderr line, and (when it failed
        to start) the sandbox it runs in."""
        hints = []
        if self._last_words:
            hints.append(f"its last words on stderr: {self._last_words[:MAX_LAST_WORDS]!r}")
        if starting and self.sandbox not in (None, describe_sandbox(None), UNCONFINED):
            hints.append(f"it runs in the sandbox {self.sandbox} (see sandbox and network in its table)")
        return "".join(f"; {hint}" for hint in hints)

    def _heard(self, line: str) -> None:
        self._last_words = line.strip()

    def _open(self) -> Client:
        if self.config.transport == "stdio":
            cwd = os.path.abspath(os.path.expanduser(self.config.cwd or self.cwd))
            transport = stdio_transport(self.config, cwd, self._confined, self._heard)
        else:
            transport = http_transport(self.config)
        return Client(
            tapped(transport, self._look, self._lost.set),
            mode="legacy",
            cache=None,
            client_info=mcp_types.Implementation(name="echsd", version=__version__),
        )

    async def _confined(self, config: McpServerConfig, cwd: str) -> SandboxPolicy | None:
        policy = await self._confine(config, cwd) if self._confine is not None else None
        self.sandbox = describe_sandbox(policy)
        return policy

    def _note_server(self, client: Client) -> None:
        info, capabilities = client.server_info, client.server_capabilities
        self.server_info = info.model_dump(by_alias=True, exclude_none=True) if info is not None else None
        self.capabilities = capabilities.model_dump(by_alias=True, exclude_none=True) if capabilities is not None else None

    def _look(self, message: SessionMessage) -> None:
        """Every message from the server, in arrival order (before the SDK handles it)."""
        inner = message.message
        if isinstance(inner, mcp_types.JSONRPCNotification) and inner.method == LIST_CHANGED:
            self._stale = True

    async def _list(self, client: Client) -> list[mcp_types.Tool]:
        tools: list[mcp_types.Tool] = []
        cursor: str | None = None
        for _ in range(MAX_TOOL_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        return tools

    def _take_tools(self, tools: list[mcp_types.Tool]) -> None:
        kept = [tool for tool in tools if self.config.exposes(tool.name)]
        if [t.model_dump() for t in kept] != [t.model_dump() for t in self.tools]:
            self.tools = kept
            self.tools_version += 1

    # ---- what threads ask --------------------------------------------------------------------

    def start(self, nursery: trio.Nursery) -> None:
        """Start the runner if it never ran (servers start on first use)."""
        if self.state == "idle":
            self._set("starting")
            nursery.start_soon(self.run, name=f"mcp:{self.name}")

    def restart(self, nursery: trio.Nursery) -> None:
        """Start the server again now (a running session is closed first)."""
        if self.state == "disabled":
            raise ServerDown(f"the MCP server {self.name} is disabled in config.toml (enabled = false)")
        if self.state in ("idle", "stopped"):
            self.state = "idle"
            self.start(nursery)
            return
        self._kick.set()
        self._wake.set()
        if self._attempt_scope is not None:
            self._closing("starting")
            self._attempt_scope.cancel()

    async def ready(self, timeout_s: float, wake: bool = False) -> Client:
        """The connected client, waiting at most ``timeout_s`` for a start under way.
        ``wake``: a server in backoff whose next try is further away than that is tried
        once now (a call should not fail on a timer when the server is back)."""
        deadline = trio.current_time() + timeout_s
        while True:
            if self._client is not None and self.state == "ready" and not self._lost.is_set():
                return self._client
            if self.state in ("disabled", "stopped", "idle"):
                raise ServerDown(f"the MCP server {self.name} is {'disabled' if self.state == 'disabled' else 'not running'}")
            if self.state == "backoff" and self.next_attempt is not None and self.next_attempt > deadline:
                if not wake:
                    wait = max(0.0, (self.next_attempt or 0) - trio.current_time())
                    raise ServerDown(f"the MCP server {self.name} is down ({self.last_error}); it is tried again in {wait:.0f} s")
                wake = False
                self._wake.set()  # (then wait for that try, as for any start)
            changed = self._changed
            with trio.move_on_after(max(0.0, deadline - trio.current_time())):
                await changed.wait()
            if trio.current_time() >= deadline and not (self._client is not None and self.state == "ready"):
                raise ServerDown(f"the MCP server {self.name} did not come up within {timeout_s:g} s" + (f" ({self.last_error})" if self.last_error else ""))

    async def refresh(self) -> None:
        """Before a model request: wait (at most the startup timeout) for a start under way,
        and list the tools again if the server said they changed. Never raises: a server that
        is not up keeps the tools it last listed (a call to one tries it again). A server in
        backoff is not waited for: one that keeps failing must not slow every request."""
        with trio.move_on_after(self.config.startup_timeout_s):
            while self.state == "starting":
                await self._changed.wait()
        if not self._stale or self._client is None:
            return
        async with self._listing:
            client = self._client
            if not self._stale or client is None:
                return
            self._stale = False
            with trio.move_on_after(self.config.startup_timeout_s) as scope:
                try:
                    self._take_tools(await self._list(client))
                    log.info("mcp server tools changed", server=self.name, tools=len(self.tools))
                except Exception as exc:
                    self._stale = True
                    log.warning("mcp server tools could not be listed again", server=self.name, error=describe(exc))
            if scope.cancelled_caught:
                self._stale = True

    async def call(self, tool: str, arguments: dict[str, Any], timeout_s: float, progress: Progress | None = None) -> mcp_types.CallToolResult:
        """Call ``tool``; ``ServerDown`` if the server is not there, ``CallFailed`` if the call got no result."""
        client = await self.ready(self.config.startup_timeout_s, wake=True)
        try:
            return await client.call_tool(tool, arguments, read_timeout_seconds=timeout_s, progress_callback=progress)
        except MCPError as exc:
            if exc.error.code == mcp_types.REQUEST_TIMEOUT:
                raise CallFailed(f"the MCP server {self.name} did not answer within {timeout_s:g} s (tool_timeout_sec); the call was cancelled") from None
            if exc.error.code == mcp_types.CONNECTION_CLOSED:
                self._lost.set()
                if self.config.transport == "stdio":
                    raise CallFailed(f"the MCP server {self.name} exited or closed the connection during the call; it is started again for the next call") from None
                raise CallFailed(f"the connection to the MCP server {self.name} was lost during the call; it is connected again for the next call") from None
            raise CallFailed(f"the MCP server {self.name} answered with an error: {exc.error.message}") from None
        except Exception as exc:  # a broken connection, an answer that is not a valid result
            raise CallFailed(f"the call to the MCP server {self.name} failed: {describe(exc)}") from None
