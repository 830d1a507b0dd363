"""One app-server client connection: the IO shell around the framing and the method table.

Four tasks: the reader decodes frames and starts one task per request (the TUI sends
many at once and waits on each, so a slow ``turn/start`` must not hold up ``model/list``);
the writer drains the ``Outbox`` (all that is pending in few socket writes, ``sending``),
which holds at most ``[tuning] client_queue_bytes`` unsent, like the native wire's; the
heartbeat (``echsd.wire.shell``, the native wire's) closes a connection whose pong does not
come back (a half-open peer must not keep its feeds forever); the requests' own tasks
answer when done. Notifications
come from the connection's ``ThreadFeed``s (hub callbacks, synchronous) straight into the
outbox, in event order.

Approvals are requests *from* us: each echsd approval a watched thread asks for becomes
an ``item/.../requestApproval`` with our own id; the client's answer goes to
``approval.respond`` through the router (``cancel`` also interrupts the turn), and when the
approval ends some other way (another client, a timeout, an interrupt) the client is told
with ``serverRequest/resolved``.

Threads this connection started with ``thread/start`` and never used are deleted when the
client leaves (``presence``), unless another client watches them; a connection ended by
the daemon's shutdown deletes nothing.

Nothing a client sends can take the daemon down: a handler's bug becomes an ``-32603``
answer, logged with its traceback.
"""

from __future__ import annotations

import inspect
import itertools
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

import trio
from trio_websocket import ConnectionClosed, WebSocketConnection

from echsd.appserver import framing
from echsd.appserver.context import AppContext
from echsd.appserver.feed import ThreadFeed
from echsd.appserver.ids import thread_id_of
from echsd.appserver.framing import INTERNAL_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, RpcError
from echsd.appserver.intake import Intake
from echsd.appserver.outbox import DROPPABLE, Outbox
from echsd.appserver.presence import PROBE_EVENTS, untouched
from echsd.appserver.sending import send_frames
from echsd.appserver.translate import ApprovalEnded, AskApproval, Notify, Out
from echsd.errors import EchsError, InvalidState, NotFound
from echsd.logs import get_logger
from echsd.ops.base import Op
from echsd.ops.daemon import RespondApproval
from echsd.ops.threads import Delete, Events, Interrupt
from echsd.wire.shell import heartbeat, outbound_bytes

log = get_logger(__name__)

CLOSE_WAIT_S = 2.0  # for the close frame of a connection that overflowed
REMEMBERED_CLIENT_IDS = 4096
_ids = itertools.count(1)

Handler = Callable[["Connection", framing.Request], Awaitable[Any] | Any]
APPROVE = ("accept", "acceptForSession", "acceptWithExecpolicyAmendment", "applyNetworkPolicyAmendment")
FOR_THE_THREAD = ("acceptForSession", "acceptWithExecpolicyAmendment")  # echsd's "approve for this thread"


class Answered:
    """A handler's result meaning "I have sent the response myself" (see ``turn/start``)."""


ANSWERED = Answered()


@dataclass
class Reply:
    """A result, and notifications that must follow the response (e.g. ``thread/started``)."""

    result: Any
    then: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


@dataclass
class _Asked:
    """An approval request we sent and the client has not answered."""

    approval_id: str
    thread_id: str
    thread_uuid: str
    answered: bool = False


class Connection:
    def __init__(self, context: AppContext, ws: WebSocketConnection, transport: str) -> None:
        self.id = next(_ids)
        self.context = context
        self.router = context.router
        self.settings = context.settings
        self.ws = ws
        self.transport = transport
        self.initialized = False
        self.opted_out: frozenset[str] = frozenset()
        self.feeds: dict[str, ThreadFeed] = {}
        self.started: list[str] = []  # threads this connection created (thread/start)
        self.policies_sent: dict[str, tuple[Any, Any]] = {}  # thread -> (approvalPolicy, sandboxPolicy) its last turn/start sent
        self.client_ids: dict[str, str] = {}  # input id -> the client's message id
        soft, hard = outbound_bytes(context.settings.tuning)
        self.outbox = Outbox(soft_bytes=soft, hard_bytes=hard)  # the native wire's budget
        tuning = context.settings.tuning
        self.intake = Intake(self.outbox, tuning.app_server_requests, tuning.max_message_bytes, context.history_reads)
        self._closing = False
        self._attaching: dict[str, trio.Event] = {}
        self._asked: dict[int, _Asked] = {}
        self._asked_ids = itertools.count()
        self._wake = trio.Event()
        self._nursery: trio.Nursery | None = None
        self._log = log.bind(connection=self.id, transport=transport)

    # -- life -----------------------------------------------------------------------------------

    async def run(self) -> None:
        self._log.info("app-server client connected")
        presence = self.context.presence
        presence.joined(self.id)
        try:
            try:
                async with trio.open_nursery() as nursery:
                    self._nursery = nursery
                    nursery.start_soon(self._write_frames, nursery.cancel_scope)
                    if self.settings.tuning.heartbeat_s > 0:
                        nursery.start_soon(heartbeat, self.ws, self.settings.tuning.heartbeat_s, nursery.cancel_scope, self._silent)
                    await self._read_frames(nursery)
                    nursery.cancel_scope.cancel()
            finally:
                for thread_id in list(self.feeds):
                    self.detach(thread_id)
                self._log.info("app-server client left", dropped_deltas=self.outbox.dropped)
            for thread_id in self.started:  # not when the daemon stops: that is no leaving
                await self._drop_if_unused(thread_id)
        finally:
            presence.left(self.id)

    async def _drop_if_unused(self, thread_id: str) -> None:
        """Delete a thread this client started and left without ever using it."""
        if self.context.presence.watched(thread_id):
            return  # another client has it open
        try:
            if untouched(await self.run_op(Events(thread_id=thread_id, since=0, limit=PROBE_EVENTS))):
                await self.run_op(Delete(thread_id=thread_id))
                self._log.info("deleted a thread the client started and never used", thread_id=thread_id)
        except EchsError as exc:  # gone already, or running after all
            self._log.info("kept a thread the client started", thread_id=thread_id, reason=exc.message)

    async def _read_frames(self, nursery: trio.Nursery) -> None:
        try:
            while True:
                incoming = framing.decode(await self.ws.get_message())
                if isinstance(incoming, framing.Request):
                    await self.intake.admit()
                    nursery.start_soon(self._answer, incoming)
                elif isinstance(incoming, framing.Response):
                    self._on_response(incoming)
                elif isinstance(incoming, framing.FrameProblem):
                    self._on_problem(incoming)
                elif incoming.method != "initialized":
                    self._log.debug("client notification ignored", method=incoming.method)
        except ConnectionClosed:
            pass

    async def _write_frames(self, scope: trio.CancelScope) -> None:
        try:
            while True:
                if not self.outbox:
                    self._wake = trio.Event()
                    await self._wake.wait()
                    continue
                await send_frames(self.ws, self.outbox.take())
                self.outbox.sent()
                self.intake.moved()
        except ConnectionClosed:
            scope.cancel()

    async def _close_overflowed(self) -> None:
        """Close a connection whose notifications overflowed: with 1008 if the close frame
        gets through (the writer may be stuck on a client that reads nothing), then end it."""
        self._log.warning("client too slow: its backlog overflowed; closing the connection")
        with trio.move_on_after(CLOSE_WAIT_S):
            try:
                await self.ws.aclose(1008, "backlog overflow: reconnect and resume")
            except ConnectionClosed:
                pass
        if self._nursery is not None:
            self._nursery.cancel_scope.cancel()

    def _silent(self) -> None:
        self._log.info("no pong from the app-server client; closing the connection")

    async def run_op(self, op: Op) -> Any:
        """An echsd op, wherever it runs (the native wire's definitions, limits included)."""
        return await self.router.run(op)

    # -- sending --------------------------------------------------------------------------------

    def _push(self, message: dict[str, Any], *, droppable: bool = False) -> None:
        self.outbox.push(framing.encode(message), droppable=droppable)
        if self.outbox.overflowed and not self._closing and self._nursery is not None:
            self._closing = True
            self._nursery.start_soon(self._close_overflowed)
        self._wake_writer()

    def _push_answer(self, message: dict[str, Any]) -> None:
        self.outbox.push_answer(framing.encode(message))
        self._wake_writer()

    def _wake_writer(self) -> None:
        if not self._wake.is_set():
            self._wake.set()

    def respond(self, request_id: framing.RequestId, result: Any) -> None:
        frame = framing.encode(framing.result(request_id, result))
        if self.intake.too_large(len(frame)):
            limit = self.intake.answer_bytes
            self.fail(
                request_id,
                INVALID_REQUEST,
                f"the answer is {len(frame):,} bytes, more than the limit of {limit:,} bytes ([tuning] max_message_bytes): "
                "ask for less (thread/turns/list and thread/items/list read a thread in pages)",
            )
            return
        self.outbox.push_answer(frame)
        self._wake_writer()

    def fail(self, request_id: framing.RequestId, code: int, message: str) -> None:
        self._push_answer(framing.error(request_id, code, message))

    def notify(self, method: str, params: dict[str, Any]) -> None:
        if method not in self.opted_out:
            self._push(framing.notification(method, params), droppable=method in DROPPABLE)

    def deliver(self, outs: list[Out]) -> None:
        """A feed's output: notifications, approval requests to send or withdraw."""
        for out in outs:
            if isinstance(out, Notify):
                self.notify(out.method, out.params)
            elif isinstance(out, AskApproval):
                self._ask(out)
            elif isinstance(out, ApprovalEnded):
                self._withdraw(out.approval_id)

    # -- requests -------------------------------------------------------------------------------

    async def _answer(self, request: framing.Request) -> None:
        try:
            handler = self.context.methods.get(request.method)
            if request.method != "initialize" and not self.initialized:
                raise RpcError(INVALID_REQUEST, "not initialized: send initialize first")
            if handler is None:
                raise RpcError(METHOD_NOT_FOUND, f"{request.method} is not supported by echsd's app-server listener")
            outcome = handler(self, request)
            if inspect.isawaitable(outcome):
                outcome = await outcome
        except RpcError as exc:
            self.fail(request.id, exc.code, exc.message)
        except EchsError as exc:
            self.fail(request.id, INVALID_REQUEST, f"{exc.message} ({exc.code})")
        except Exception as exc:
            self._log.exception("app-server request failed", method=request.method)
            self.fail(request.id, INTERNAL_ERROR, f"internal error ({type(exc).__name__}); see the daemon log")
        else:
            if isinstance(outcome, Reply):
                self.respond(request.id, outcome.result)
                for method, params in outcome.then:
                    self.notify(method, params)
            elif outcome is not ANSWERED:
                self.respond(request.id, outcome)
        finally:
            self.intake.done()

    def _on_problem(self, problem: framing.FrameProblem) -> None:
        self._log.info("bad frame from an app-server client", problem=problem.message)
        if problem.id is not None:
            self.fail(problem.id, problem.code, problem.message)
        else:
            self.notify("warning", {"threadId": None, "message": f"echsd could not read a message: {problem.message}"})

    # -- threads this connection watches -----------------------------------------------------

    async def attach(self, thread_id: str) -> ThreadFeed:
        """The thread's feed, started (caught up with the log) on first use."""
        while True:
            feed = self.feeds.get(thread_id)
            if feed is not None:
                return feed
            starting = self._attaching.get(thread_id)
            if starting is None:
                break
            await starting.wait()
        self._attaching[thread_id] = done = trio.Event()
        try:
            feed = ThreadFeed(thread_id, self.context, self.deliver, self.client_ids, self.context_window)
            await feed.start()
            self.feeds[thread_id] = feed
            self.context.presence.watch(thread_id, self.id)
            return feed
        finally:
            del self._attaching[thread_id]
            done.set()

    def detach(self, thread_id: str) -> bool:
        feed = self.feeds.pop(thread_id, None)
        if feed is None:
            return False
        feed.close()
        self.context.presence.unwatch(thread_id, self.id)
        for request_id, asked in list(self._asked.items()):
            if asked.thread_id == thread_id:
                del self._asked[request_id]
        return True

    def remember_client_id(self, input_id: str, client_id: str | None) -> None:
        if client_id:
            self.client_ids[input_id] = client_id
            while len(self.client_ids) > REMEMBERED_CLIENT_IDS:
                del self.client_ids[next(iter(self.client_ids))]

    def context_window(self, model: str) -> int | None:
        catalog = self.settings.catalog
        return catalog.get(model).context_window if catalog is not None else None

    # -- approvals ------------------------------------------------------------------------------

    def _ask(self, ask: AskApproval) -> None:
        if any(asked.approval_id == ask.approval_id for asked in self._asked.values()):
            return
        request_id = next(self._asked_ids)
        thread_uuid = str(ask.params["threadId"])
        self._asked[request_id] = _Asked(ask.approval_id, thread_id_of(thread_uuid) or "", thread_uuid)
        self._push_answer(framing.server_request(request_id, ask.method, ask.params))

    def _withdraw(self, approval_id: str) -> None:
        for request_id, asked in list(self._asked.items()):
            if asked.approval_id == approval_id:
                del self._asked[request_id]
                self.notify("serverRequest/resolved", {"threadId": asked.thread_uuid, "requestId": request_id})

    def _on_response(self, response: framing.Response) -> None:
        asked = self._asked.get(response.id) if isinstance(response.id, int) else None
        if asked is None or asked.answered:
            self._log.info("answer to no pending request", request_id=response.id)
            return
        if response.error is not None:
            self._log.info("the client could not answer an approval; it stays pending", error=response.error)
            return
        asked.answered = True  # its serverRequest/resolved follows when echsd settles it
        decision = response.result.get("decision") if isinstance(response.result, dict) else None
        name = next(iter(decision), None) if isinstance(decision, dict) else decision
        verdict = "approve" if name in APPROVE else "deny"
        if self._nursery is not None:
            self._nursery.start_soon(self._settle, asked, verdict, name == "cancel", name in FOR_THE_THREAD)

    async def _settle(self, asked: _Asked, verdict: str, cancel: bool, always: bool = False) -> None:
        """Answer the approval wherever it waits; ``cancel`` also interrupts the turn;
        ``always`` approves for the thread (once only, for a call no rule can name)."""
        try:
            try:
                await self.run_op(RespondApproval(request_id=asked.approval_id, decision=verdict, always=always or None))
            except InvalidState:
                if not always:
                    raise
                await self.run_op(RespondApproval(request_id=asked.approval_id, decision=verdict))
        except NotFound:
            pass  # answered elsewhere, timed out or cancelled meanwhile: nothing to do
        except EchsError as exc:
            self._log.info("approval answer refused", approval=asked.approval_id, error=exc.message)
        if cancel and asked.thread_id:
            await self._interrupt_after_cancel(asked.thread_id)

    async def _interrupt_after_cancel(self, thread_id: str) -> None:
        try:
            await self.run_op(Interrupt(thread_id=thread_id))
        except EchsError as exc:
            self._log.info("could not interrupt after a cancelled approval", thread_id=thread_id, error=exc.message)
