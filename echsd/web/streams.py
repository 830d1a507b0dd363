"""The web view's live streams: Server-Sent Events over one HTTP response each.

A stream is a small connection shell around the native wire's own parts: an ``Outbox``
(bounded in events and bytes; a page too slow to keep up gets an ``events.gap`` and
reconnects from its last seq) written as SSE (``echsd.wire.encoding.SSE``), and the same
``Subscriptions`` / ``BoardSubscriptions`` that do "replay, then go live" for the wire.

- ``thread_stream``: one thread's events after ``since`` (or the browser's
  ``Last-Event-ID`` on a reconnect), then live;
- ``overview_stream``: what the page's lists need, live: thread objects as they change
  (coalesced: a thread is re-read at most every ``FLUSH_S`` however fast it streams),
  the pending approvals when they change, and blackboard changes.

Either ends when the browser goes away, its session ends (``echs web --revoke``, expiry)
or the daemon stops. A comment line every ``heartbeat_s`` keeps it open through proxies
and finds a browser that left without a word.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Awaitable, Callable

import orjson
import trio

from echsd.errors import EchsError, NotFound
from echsd.events import (
    EVENT_TYPES,
    AccountRateLimits,
    ApprovalRequested,
    ApprovalResolved,
    BlackboardChanged,
    Event,
    EventsGap,
    HistoryPruned,
    ItemCompleted,
    RemoteToolCall,
)
from echsd.logs import get_logger
from echsd.ops.daemon import ListApprovals
from echsd.ops.threads import Get, ListThreads
from echsd.threads.hub import Listening
from echsd.web.context import WebContext
from echsd.web.http import Receive, Send
from echsd.web.sessions import WebSession
from echsd.wire.board_subscriptions import BoardSubscriptions
from echsd.wire.encoding import SSE
from echsd.wire.outbox import Outbox
from echsd.wire.subscriptions import Subscriptions

log = get_logger(__name__)

FLUSH_S = 0.25  # the overview re-reads changed threads at most this often
REFRESH_S = 5.0  # ... and running ones this often anyway (their waiting_on ages)
HEARTBEAT_S = 15.0  # with [tuning] heartbeat_s = 0 (no pings on the wire): still a comment now and then
MAX_UNSENT_BYTES = 4 * 1024 * 1024  # overview messages a page has not read yet
SSE_HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-store"),
    (b"x-accel-buffering", b"no"),
    (b"x-content-type-options", b"nosniff"),
]
# Events after which a thread's row (state, cost, waiting_on, ...) or the approvals change:
# every type but streamed text, items and notices the list does not show.
QUIET = frozenset(kind.type_name for kind in (ItemCompleted, AccountRateLimits, HistoryPruned, EventsGap, BlackboardChanged, RemoteToolCall))
ROW_EVENTS = frozenset(name for name, kind in EVENT_TYPES.items() if not kind.streamed and name not in QUIET)
APPROVAL_EVENTS = frozenset({ApprovalRequested.type_name, ApprovalResolved.type_name})


def message(kind: str, data: Any) -> bytes:
    """A message of the overview that is not an event: ``{"kind": ..., "data": ...}``."""
    return b"data: " + orjson.dumps({"kind": kind, "data": data}) + b"\n\n"


class SseShell:
    """One SSE response: the outbox, its writer, the heartbeat, and when to stop."""

    def __init__(self, context: WebContext, session: WebSession, send: Send, receive: Receive) -> None:
        tuning = context.settings.tuning
        self.context, self.session = context, session
        self._send, self._receive = send, receive
        self.heartbeat_s = tuning.heartbeat_s or HEARTBEAT_S
        self.outbox = Outbox(tuning.client_queue_events, max_event_bytes=tuning.client_queue_bytes, tally=context.tally, encoding=SSE)
        self._wake = trio.Event()
        self._progress = trio.Event()

    def wake(self) -> None:
        if not self._wake.is_set():
            self._wake.set()

    def push(self, data: bytes) -> None:
        """A message that is not an event (never dropped; the caller bounds them)."""
        self.outbox.push_response(data)
        self.wake()

    async def wait_sent(self, limit: int) -> None:
        """Until the messages not yet sent weigh less than ``limit`` bytes."""
        while self.outbox.response_bytes >= limit:
            await self._progress.wait()

    async def wait_room(self, room: int, size: int) -> None:
        """Until ``room`` more events of ``size`` bytes fit (a replay never overflows it)."""
        outbox = self.outbox
        while outbox.events and (outbox.events + room > outbox.max_events or outbox.event_bytes + size > outbox.max_event_bytes):
            await self._progress.wait()

    async def run(self, start: Callable[[trio.Nursery], Awaitable[None]]) -> None:
        """Send the headers, run ``start`` (which subscribes), then serve until the end."""
        await self._send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._watch_client, nursery.cancel_scope)
            nursery.start_soon(self._watch_session, nursery.cancel_scope)
            nursery.start_soon(self._write, nursery.cancel_scope)
            await start(nursery)
        try:  # the end of the response (a browser gone by now ignores it)
            await self._send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:
            pass

    async def _write(self, scope: trio.CancelScope) -> None:
        outbox = self.outbox
        try:
            while True:
                if not outbox:
                    outbox.writer_idle = True
                    self._advance()
                    with trio.move_on_after(self.heartbeat_s):
                        await self._wake.wait()
                    if not self._wake.is_set():
                        await self._send({"type": "http.response.body", "body": b": keep-alive\n\n", "more_body": True})
                    self._wake = trio.Event()
                    continue
                frames = outbox.take()
                outbox.writer_idle = False
                self._advance()
                await self._send({"type": "http.response.body", "body": b"".join(frames), "more_body": True})
                outbox.sent()
                self._advance()
        except OSError:  # the browser left (hypercorn raises on a closed connection)
            scope.cancel()

    def _advance(self) -> None:
        progress, self._progress = self._progress, trio.Event()
        progress.set()

    async def _watch_client(self, scope: trio.CancelScope) -> None:
        while (await self._receive())["type"] != "http.disconnect":
            pass
        scope.cancel()

    async def _watch_session(self, scope: trio.CancelScope) -> None:
        """End the stream when its session ends (revoked, expired)."""
        sessions = self.context.sessions
        while True:
            with trio.move_on_after(self.heartbeat_s):
                await self.context.revoked.wait()
            if not sessions.alive(self.session):
                scope.cancel()
                return


async def thread_stream(context: WebContext, shell: SseShell, thread_id: str, since: int | None) -> None:
    """One thread's events with seq > ``since`` (all of them for 0), then live."""
    subscriptions = Subscriptions(context.router, context.hub, context.store, shell.outbox, shell.wake, shell.wait_room)

    async def start(nursery: trio.Nursery) -> None:
        try:
            answer = await subscriptions.subscribe(thread_id, since)
        except EchsError as exc:  # deleted since the handler looked: said, and the stream ends
            shell.push(message("error", {"code": exc.code, "message": exc.message}))
            await shell.wait_sent(1)
            nursery.cancel_scope.cancel()
            return
        shell.push(message("subscribed", answer))
        await trio.sleep_forever()

    try:
        await shell.run(start)
    finally:
        subscriptions.close()


async def overview_stream(context: WebContext, shell: SseShell) -> None:
    """Thread objects and approvals as they change, and the blackboard's changes."""
    overview = _Overview(context, shell)
    board = BoardSubscriptions(context.boards.board, shell.outbox, shell.wake, shell.wait_room)

    async def start(nursery: trio.Nursery) -> None:
        overview.listen()
        await board.subscribe("", None)
        await overview.snapshot()
        await overview.run()

    try:
        await shell.run(start)
    finally:
        overview.close()
        board.close()


@dataclass
class _Overview:
    context: WebContext
    shell: SseShell

    def __post_init__(self) -> None:
        self._dirty: set[str] = set()
        self._running: set[str] = set()  # threads last shown running (re-read every REFRESH_S)
        self._approvals = False
        self._changed = trio.Event()
        self._listening: Listening | None = None

    def listen(self) -> None:
        self._listening = self.context.hub.listen("*", self._on_event)

    def close(self) -> None:
        if self._listening is not None:
            self._listening.close()

    def _on_event(self, event: Event) -> None:
        """The hub callback: one set lookup for an event the lists do not show."""
        if event.type not in ROW_EVENTS:
            return
        self._dirty.add(event.thread_id)
        if event.type in APPROVAL_EVENTS:
            self._approvals = True
        self._changed.set()

    async def snapshot(self) -> None:
        router = self.context.router
        threads = await router.run(ListThreads())
        self._running = {thread["thread_id"] for thread in threads if thread["state"] == "running"}
        self.shell.push(message("threads", threads))
        self.shell.push(message("approvals", await router.run(ListApprovals())))

    async def run(self) -> None:
        router, shell = self.context.router, self.shell
        next_refresh = trio.current_time() + REFRESH_S
        while True:
            with trio.move_on_at(next_refresh):
                await self._changed.wait()
            self._changed = trio.Event()
            await shell.wait_sent(MAX_UNSENT_BYTES)  # a page that reads nothing holds one budget, no more
            if trio.current_time() >= next_refresh:
                next_refresh = trio.current_time() + REFRESH_S
                self._dirty |= self._running
            dirty, self._dirty = self._dirty, set()
            for thread_id in sorted(dirty):
                try:
                    thread = await router.run(Get(thread_id=thread_id))
                except NotFound:
                    self._running.discard(thread_id)
                    shell.push(message("thread_gone", {"thread_id": thread_id}))
                    continue
                except EchsError as exc:
                    log.info("the web view cannot read a thread", thread_id=thread_id, error=exc.message)
                    continue
                (self._running.add if thread["state"] == "running" else self._running.discard)(thread_id)
                shell.push(message("thread", thread))
            if self._approvals:
                self._approvals = False
                shell.push(message("approvals", await router.run(ListApprovals())))
            await trio.sleep(FLUSH_S)  # a pace, not a wait for anything: changes meanwhile are coalesced
