"""One authenticated-or-not WebSocket connection: four tasks around the sans-IO cores.

- reader: moves incoming frames into our own bounded queue (``INCOMING_QUEUE`` frames,
  and no further once ``INCOMING_BYTES`` wait), so trio-websocket's reader (which holds
  one message) keeps running and pongs keep flowing while a request works;
- requests: handles frames one at a time, in order (``background`` ops such as
  ``thread.compact`` run on the side and answer when done). Until a good ``hello``
  nothing else is served, and the hello must come before the connection's deadline.
  A big frame is decoded a slice at a time, so it never holds up other connections;
  the next request waits while a budget of answers is still unsent;
- writer: drains the ``Outbox`` (responses and batched events) into frames;
- heartbeat (``shell.heartbeat``, shared with the app-server listener): pings every
  ``heartbeat_s``; no pong within ``shell.MISSED_PINGS`` heartbeats
  closes the connection.

Nothing a client sends can end the daemon or affect another connection: every failure
becomes an error response (``internal`` for bugs, logged with the traceback).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Callable

import trio
from trio_websocket import ConnectionClosed, WebSocketConnection

from echsd import __version__
from echsd.blackboard.service import BlackboardService
from echsd.errors import BadRequest, EchsError, Unauthorized, UnknownOp
from echsd.logs import get_logger, register_secret
from echsd.settings import Settings
from echsd.store import Store
from echsd.ops.base import Op, Where
from echsd.ops.daemon import Hello, Subscribe, Unsubscribe, subscription_of
from echsd.router import ThreadRouter
from echsd.threads.hub import EventHub
from echsd.wire import codec
from echsd.wire.board_subscriptions import BoardSubscriptions
from echsd.wire.codec import FrameError, RequestError
from echsd.wire.outbox import Outbox, OutboxTally
from echsd.wire.peers import Peers
from echsd.wire.params import ParamsError
from echsd.wire.schema import OPS_BY_NAME, OpSpec
from echsd.wire.shell import heartbeat
from echsd.wire.subscriptions import Subscriptions
from echsd.wire.token import TokenError, read_token, token_matches

log = get_logger(__name__)

PRE_AUTH_MESSAGE_BYTES = 4096  # the largest message before a good hello (a hello is ~100 bytes)
INCOMING_QUEUE = 64  # frames read ahead of the request loop
INCOMING_BYTES = 1024 * 1024  # ... and no more once this much waits (plus the frame that crossed it)
INLINE_DECODE_BYTES = 256 * 1024  # bigger frames are decoded in slices (codec.RequestDecoder)
MAX_PENDING_RESPONSES = 256  # the request loop waits while this many are unsent
MAX_BACKGROUND = 8  # background ops in flight per connection
FLUSH_TIMEOUT_S = 5.0
_ids = itertools.count(1)


@dataclass(frozen=True)
class WireContext:
    """What a connection needs from the daemon."""

    router: ThreadRouter
    hub: EventHub
    store: Store
    settings: Settings
    blackboard: BlackboardService
    peers: Peers = field(default_factory=Peers)
    tally: OutboxTally = field(default_factory=OutboxTally)  # every connection's outbox, for metrics


class Session:
    def __init__(
        self,
        context: WireContext,
        ws: WebSocketConnection,
        transport: str,
        hello_deadline: float,
        on_authenticated: Callable[[], None] = lambda: None,
    ) -> None:
        self.id = next(_ids)
        self.context = context
        self.router = context.router
        self.ws = ws
        self.transport = transport
        self.authenticated = False
        self.dead = False  # unresponsive: skip the closing handshake
        self.closed = False
        self._hello_deadline = hello_deadline  # trio time
        self._on_authenticated = on_authenticated
        self._on_close: list[Callable[[], None]] = []
        tuning = context.settings.tuning
        self.max_message_bytes = tuning.max_message_bytes
        self.outbox = Outbox(tuning.client_queue_events, max_event_bytes=tuning.client_queue_bytes, tally=context.tally)
        self._incoming_bytes = 0
        self._incoming_drained = trio.Event()
        self._wake = trio.Event()
        self._progress = trio.Event()  # set (and replaced) each time the writer moves on
        self._sending = False
        self.subscriptions = Subscriptions(
            context.router, context.hub, context.store, self.outbox, self._wake_writer, self._wait_event_room
        )
        self.blackboard = context.blackboard
        self.board_subscriptions = BoardSubscriptions(context.blackboard.board, self.outbox, self._wake_writer, self._wait_event_room)
        self._log = log.bind(connection=self.id, transport=transport)

    # -- the connection's life --------------------------------------------------------------

    async def run(self) -> int:
        """Serve until the peer leaves or must go; returns the close code to send."""
        self._log.debug("connection opened")
        incoming_send, incoming_receive = trio.open_memory_channel[bytes | str](INCOMING_QUEUE)
        code = 1000
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._read_frames, incoming_send)
                nursery.start_soon(self._write_frames, nursery.cancel_scope)
                if self.context.settings.tuning.heartbeat_s > 0:
                    nursery.start_soon(heartbeat, self.ws, self.context.settings.tuning.heartbeat_s, nursery.cancel_scope, self._silent)
                code = await self._serve_requests(incoming_receive, nursery)
                nursery.cancel_scope.cancel()
            return code
        finally:
            self.subscriptions.close()
            self.board_subscriptions.close()
            self._mark_closed()
            self._log.debug("connection closed", dropped_events=self.outbox.dropped, gaps=self.outbox.gaps)

    # -- the direct path (echsd.wire.peers): messages for this connection only ---------------

    @property
    def peer_id(self) -> int:
        return self.id

    def send_direct(self, message: dict[str, Any]) -> bool:
        """Queue a message for this client alone (never dropped by event backpressure)."""
        if self.closed:
            return False
        self.outbox.push_response(codec.packb(message))
        self._wake_writer()
        return True

    def on_close(self, callback: Callable[[], None]) -> None:
        if self.closed:
            callback()
        else:
            self._on_close.append(callback)

    def _mark_closed(self) -> None:
        self.closed = True
        callbacks, self._on_close = self._on_close, []
        for callback in callbacks:
            try:
                callback()
            except Exception:
                self._log.exception("a connection-close callback failed")

    async def _read_frames(self, incoming: trio.MemorySendChannel[bytes | str]) -> None:
        async with incoming:
            try:
                while True:
                    message = await self.ws.get_message()
                    self._incoming_bytes += len(message)
                    await incoming.send(message)
                    while self._incoming_bytes > INCOMING_BYTES:
                        self._incoming_drained = trio.Event()
                        await self._incoming_drained.wait()
            except ConnectionClosed:
                pass

    def _took_frame(self, message: bytes | str) -> None:
        self._incoming_bytes -= len(message)
        if self._incoming_bytes <= INCOMING_BYTES:
            self._incoming_drained.set()

    async def _write_frames(self, scope: trio.CancelScope) -> None:
        try:
            while True:
                if not self.outbox:
                    self.outbox.writer_idle = True
                    self._wake = trio.Event()
                    self._advance()
                    await self._wake.wait()
                    continue
                frames = self.outbox.take()
                self.outbox.writer_idle = False
                self._sending = True
                self._advance()
                for frame in frames:
                    await self.ws.send_message(frame)
                del frames
                self.outbox.sent()
                self._sending = False
        except ConnectionClosed:
            scope.cancel()

    def _silent(self) -> None:
        self._log.info("no pong from the client; closing the connection")
        self.dead = True  # unresponsive: no closing handshake

    # -- writer coordination ------------------------------------------------------------------

    def _wake_writer(self) -> None:
        wake = self._wake
        if not wake.is_set():
            wake.set()

    def _advance(self) -> None:
        progress, self._progress = self._progress, trio.Event()
        progress.set()

    async def _wait_event_room(self, room: int, size: int) -> None:
        """Wait until ``room`` more events of ``size`` bytes fit in the outbox without an overflow."""
        outbox = self.outbox
        while outbox.events and (outbox.events + room > outbox.max_events or outbox.event_bytes + size > outbox.max_event_bytes):
            await self._progress.wait()

    async def _wait_response_room(self) -> None:
        """Answers the client has not read yet stay under one frame limit's worth (and
        ``MAX_PENDING_RESPONSES``): a client that asks without reading gets no further."""
        outbox = self.outbox
        while outbox.responses >= MAX_PENDING_RESPONSES or outbox.response_bytes >= self.max_message_bytes:
            await self._progress.wait()

    async def _flush(self) -> None:
        with trio.move_on_after(FLUSH_TIMEOUT_S):
            while self.outbox or self._sending:
                await self._progress.wait()

    def _respond(self, request_id: int, spec: OpSpec, result: Any) -> None:
        try:
            data = codec.encode_result(request_id, result)
        except Exception:
            self._log.exception("cannot encode a result")
            data = codec.encode_error(request_id, "internal", "internal error: the result could not be encoded")
        if len(data) > self.max_message_bytes:
            paging = "; ask for it in pages with offset/limit" if "offset" in spec.by_name else ""
            message = (
                f"{spec.op_name}: the answer is {len(data):,} bytes, more than the frame limit of "
                f"{self.max_message_bytes:,} bytes ([tuning] max_message_bytes){paging}"
            )
            data = codec.encode_error(request_id, "too_large", message)
        self.outbox.push_response(data)
        self._wake_writer()

    def _error(self, request_id: int | None, code: str, message: str, retry_after_s: float | None = None) -> None:
        self.outbox.push_response(codec.encode_error(request_id, code, message, retry_after_s))
        self._wake_writer()

    # -- requests -------------------------------------------------------------------------------

    async def _serve_requests(self, incoming: trio.MemoryReceiveChannel[bytes | str], nursery: trio.Nursery) -> int:
        background = trio.Semaphore(MAX_BACKGROUND)
        async with incoming:
            while True:
                with trio.move_on_at(math.inf if self.authenticated else self._hello_deadline):
                    try:
                        message = await incoming.receive()
                    except trio.EndOfChannel:
                        return 1000
                    self._took_frame(message)
                    await self._wait_response_room()
                    if not await self._handle(message, nursery, background):
                        await self._flush()
                        return 1008
                    continue
                timeout = self.context.settings.tuning.hello_timeout_s
                self._refuse(None, f"no hello within {timeout:g} s of connecting")
                await self._flush()
                return 1008

    async def _decode(self, message: bytes | str) -> codec.Request:
        """The frame's request; big frames are decoded a slice at a time between checkpoints."""
        if len(message) <= INLINE_DECODE_BYTES:
            return codec.decode_request(message)
        decoder = codec.RequestDecoder(message)
        while not decoder.step():
            await trio.lowlevel.checkpoint()
        return decoder.request()

    async def _handle(self, message: bytes | str, nursery: trio.Nursery, background: trio.Semaphore) -> bool:
        """Handle one frame; False when the connection must be closed."""
        try:
            request = await self._decode(message)
        except FrameError as exc:
            return self._refuse_or_error(None, exc.code, str(exc))
        except RequestError as exc:
            return self._refuse_or_error(exc.request_id, exc.code, exc.message)
        if not self.authenticated and request.op != "hello":
            return self._refuse(request.id, "the first request must be hello")
        spec = OPS_BY_NAME.get(request.op)
        if spec is None:
            unknown = UnknownOp(f"op {request.op!r} does not exist")
            self._error(request.id, unknown.code, unknown.message)
            return True
        try:
            bound = {"peer": self} if "peer" in spec.__dataclass_fields__ else {}  # type: ignore[attr-defined]
            op = spec.from_wire(request.params, **bound)
        except ParamsError as exc:
            return self._refuse_or_error(request.id, "bad_request", str(exc))
        except EchsError as exc:
            return self._refuse_or_error(request.id, exc.code, exc.message)
        except Exception as exc:  # a bug in an op's definition answers that request, nothing more
            self._log.exception("cannot build the op", op=spec.op_name)
            return self._refuse_or_error(request.id, "internal", f"internal error ({type(exc).__name__}); see the daemon log")
        if spec.background:
            await background.acquire()
            nursery.start_soon(self._call_in_background, request.id, op, background)
            return True
        await self._call(request.id, op)
        return self.authenticated

    async def _call_in_background(self, request_id: int, op: Op, slots: trio.Semaphore) -> None:
        try:
            await self._call(request_id, op)
        finally:
            slots.release()

    async def _run(self, op: Op) -> Any:
        """The connection's own ops here; every other one through the router."""
        if op.where is not Where.CONNECTION:
            return await self.router.run(op)
        if isinstance(op, Hello):
            return await self.authenticate(op.token)
        if isinstance(op, Subscribe):
            thread_id, prefix = subscription_of(op.thread_id, op.blackboard)
            if prefix is not None:
                return await self.board_subscriptions.subscribe(prefix, op.since)
            return await self.subscriptions.subscribe(thread_id, op.since)  # type: ignore[arg-type]
        if isinstance(op, Unsubscribe):
            thread_id, prefix = subscription_of(op.thread_id, op.blackboard)
            if prefix is not None:
                return self.board_subscriptions.unsubscribe(prefix)
            return self.subscriptions.unsubscribe(thread_id)  # type: ignore[arg-type]
        raise UnknownOp(f"op {op.op_name!r} is not served on this connection")

    async def _call(self, request_id: int, op: Op) -> None:
        spec = type(op)
        try:
            result = await self._run(op)
        except EchsError as exc:
            self._error(request_id, exc.code, exc.message, exc.retry_after_s)
        except Exception as exc:
            self._log.exception("request failed", op=spec.op_name)
            self._error(request_id, "internal", f"internal error ({type(exc).__name__}); see the daemon log")
        else:
            self._respond(request_id, spec, result)

    def _refuse_or_error(self, request_id: int | None, code: str, message: str) -> bool:
        if not self.authenticated:
            return self._refuse(request_id, message)
        self._error(request_id, code, message)
        return True

    def _refuse(self, request_id: int | None, message: str) -> bool:
        self._log.info("connection refused: not authenticated", reason=message)
        self._error(request_id, "unauthorized", message)
        return False

    async def authenticate(self, token: str) -> dict[str, Any]:
        """``hello``: compare with the token file as it is now (rotation-aware)."""
        if self.authenticated:
            raise BadRequest("already authenticated")
        path = self.context.settings.token_path
        try:
            expected = await trio.to_thread.run_sync(read_token, path)
        except TokenError as exc:
            self._log.error("cannot check a client token", error=str(exc))
            raise Unauthorized("the daemon cannot read its token file") from None
        register_secret(expected)
        if not token_matches(token, expected):
            raise Unauthorized("wrong token")
        self.authenticated = True
        self._on_authenticated()
        self.context.peers.add(self)
        return {"protocol": codec.PROTOCOL_VERSION, "version": __version__, "server": "echsd", "connection": self.id}
