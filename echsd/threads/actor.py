"""The thread actor: the one task that owns a thread's state.

Everything that changes a thread goes through its mailbox and is handled here, one request
at a time; the running turn is a child task of the actor and changes state only through
the actor's methods. The rule that keeps this lock-free: after ``await log.ready()``, a
handler decides, mutates memory and emits its store unit with no checkpoint in between,
and only then awaits (the commit, a reply). Control requests that must wait for the turn to
end (interrupt, pause, kill, shutdown) park their reply and are answered when it has.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import trio

from echsd.codex import ResponsesClient
from echsd.errors import Conflict, EchsError, InvalidState
from echsd.ids import new_input_id, new_turn_id
from echsd.logs import get_logger
from echsd.settings import Tuning
from echsd.store import Store, Unit, ops, queries
from echsd.threads import control
from echsd.threads.config import reconfigure
from echsd.threads.inputs import PendingInput
from echsd.threads.mailbox import Reply, Request, error_reply
from echsd.threads.record import ThreadRecord
from echsd.threads.recovery import load_thread
from echsd.threads.state import Disposition, ThreadState, Trigger, input_disposition, parse_mode, transition
from echsd.threads.turn import Turn, TurnOutcome, run_turn
from echsd.tools.base import Tool

if TYPE_CHECKING:
    from echsd.threads.supervisor import Supervisor

log = get_logger(__name__)


@dataclass
class ActorServices:
    store: Store
    client: ResponsesClient
    tools: dict[str, Tool]
    tuning: Tuning
    supervisor: "Supervisor"
    tool_services: Any = None


class ThreadActor:
    def __init__(self, record: ThreadRecord, services: ActorServices) -> None:
        self.record = record
        self.thread_id = record.thread_id
        self.services = services
        self.client = services.client
        self.tools = services.tools
        self.tuning = services.tuning
        self.history: list[dict[str, Any]] = []
        self.queue: deque[PendingInput] = deque()
        self.steering: list[PendingInput] = []
        self.next_position = 1
        self.recent_acks: dict[str, dict[str, Any]] = {}  # client_msg_id -> ack, this session
        self.turn: Turn | None = None
        self.parked: list[tuple[Turn, Reply, str, dict[str, Any]]] = []  # replies waiting for a turn's end
        self.stopping = False
        self._nursery: trio.Nursery | None = None
        self._receive_scope: trio.CancelScope | None = None

    @property
    def log(self):  # noqa: ANN201 - ThreadLog, set by load_thread
        assert self.record.log is not None
        return self.record.log

    def cwd_path(self) -> Path:
        return Path(self.record.config.cwd)

    # ---- lifecycle -------------------------------------------------------------------

    async def run(self, crashed: BaseException | None = None) -> None:
        await load_thread(self, crashed)
        current: Request | None = None
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                await self.start_next_if_possible()
                while not self.stopping:
                    with trio.CancelScope() as self._receive_scope:
                        current = await self.record.mailbox_receive.receive()
                    if current is None or self._receive_scope.cancelled_caught:
                        continue
                    await self._handle(current)
                    current = None
        except BaseException as exc:
            if current is not None:
                error_reply(current.reply, exc)
            for _turn, reply, _kind, _extra in self.parked:
                error_reply(reply, exc)
            raise

    def _wake(self) -> None:
        if self._receive_scope is not None:
            self._receive_scope.cancel()

    async def _handle(self, request: Request) -> None:
        handler = getattr(self, f"op_{request.op}", None)
        if handler is None:
            request.reply.fail(EchsError(f"thread actor has no operation {request.op!r}"))
            return
        try:
            result = await handler(request.reply, **request.params)
        except EchsError as exc:
            request.reply.fail(exc)
            return
        if result is not control.PARKED:
            request.reply.set(result)

    # ---- history and turns (used by the turn task) -----------------------------------

    async def append_items(
        self,
        items: Sequence[dict[str, Any]],
        turn_id: str | None,
        before: Sequence[tuple[str, dict[str, Any]]] = (),
    ) -> Unit:
        """Append items to history: the rows and their ``item.completed`` events in one unit."""
        await self.log.ready()
        start = len(self.history)
        self.history.extend(items)
        events = [*before, *(("item.completed", {"turn_id": turn_id, "item": item}) for item in items)]
        return self.log.emit(events, [ops.append_items(self.thread_id, start, list(items), turn_id)])

    def has_steers(self) -> bool:
        return bool(self.steering)

    async def deliver_steers(self, turn: Turn) -> None:
        if not self.steering:
            return
        await self.log.ready()
        pending, self.steering = self.steering, []
        self.log.emit(*self._delivery(pending, turn.turn_id))

    def _delivery(self, inputs: Sequence[PendingInput], turn_id: str) -> tuple[list, list]:
        """Events and statements that put ``inputs`` into history (sync; caller emits)."""
        events: list[tuple[str, dict[str, Any]]] = []
        statements = []
        start = len(self.history)
        items = []
        for pending in inputs:
            item = pending.item()
            items.append(item)
            statements.append(pending.write("delivered", turn_id=turn_id))
            events.append(("input.delivered", {"input_id": pending.input_id, "turn_id": turn_id, "mode": pending.mode.value}))
            events.append(("item.completed", {"turn_id": turn_id, "item": item}))
        self.history.extend(items)
        statements.append(ops.append_items(self.thread_id, start, items, turn_id))
        return events, statements

    def start_turn(self, inputs: Sequence[PendingInput]) -> Unit:
        """Open a turn for ``inputs`` (sync: call right after ``log.ready()``)."""
        assert self._nursery is not None
        turn = Turn(turn_id=new_turn_id(), input_ids=[p.input_id for p in inputs])
        self.record.state = transition(self.record.state, Trigger.TURN_START)
        self.record.active_turn = turn.turn_id
        self.record.usage["turns"] = self.record.usage.get("turns", 0) + 1
        self.turn = turn
        events: list[tuple[str, dict[str, Any]]] = [
            ("thread.state", {"state": self.record.state.value}),
            ("turn.started", {"turn_id": turn.turn_id, "input_ids": turn.input_ids}),
        ]
        delivered_events, statements = self._delivery(inputs, turn.turn_id)
        unit = self.log.emit([*events, *delivered_events], [*statements, ops.upsert_thread(self.record.to_row())])
        self._nursery.start_soon(self._turn_task, turn)
        return unit

    def _can_start_next(self) -> bool:
        """A queued input may start a turn: idle, nothing running, not shutting down."""
        return not self.stopping and self.turn is None and self.record.state is ThreadState.IDLE and bool(self.queue)

    async def start_next_if_possible(self) -> None:
        if not self._can_start_next():
            return
        await self.log.ready()
        if self._can_start_next():
            self.start_turn([self.queue.popleft()])
            self.record.queued = len(self.queue)

    async def _turn_task(self, turn: Turn) -> None:
        outcome = await run_turn(self, turn)
        with trio.CancelScope(shield=True):
            await control.finish_turn(self, turn, outcome)
        await self.start_next_if_possible()
        if self.stopping:
            self._wake()

    # ---- operations (mailbox handlers) -----------------------------------------------

    def check_alive(self) -> None:
        if self.record.state is ThreadState.KILLED:
            raise InvalidState(f"thread {self.thread_id} is killed")

    async def op_send(
        self, reply: Reply, text: str, mode: str | None = None, client_msg_id: str | None = None
    ) -> dict[str, Any]:
        self.check_alive()
        if client_msg_id is not None:
            previous = await self._previous_ack(client_msg_id)
            if previous is not None:
                return previous
        input_mode = parse_mode(mode)
        await self.log.ready()
        self.check_alive()  # ready() may have waited
        disposition = input_disposition(
            self.record.state,
            input_mode,
            steer_accepted=self.turn is not None and self.turn.accepting_steer,
            queue_empty=not self.queue,
        )
        pending = PendingInput(
            input_id=new_input_id(),
            thread_id=self.thread_id,
            text=text,
            mode=input_mode,
            disposition=disposition,
            client_msg_id=client_msg_id,
        )
        if disposition is Disposition.STARTED:
            unit = self.start_turn([pending])
        elif disposition is Disposition.QUEUED:
            unit = self._enqueue(pending)
        else:
            pending.position = 0
            self.steering.append(pending)
            unit = self.log.emit([], [pending.write("steering")])
        ack = pending.ack()
        if client_msg_id is not None:
            self.recent_acks[client_msg_id] = ack
        # Shielded: once the input is in a unit, its ack must reach the client even if the
        # actor is being torn down meanwhile (e.g. its turn task crashed).
        with trio.CancelScope(shield=True):
            await unit.wait()
        return ack

    def _enqueue(self, pending: PendingInput, front: bool = False) -> Unit:
        pending.position = self.next_position
        self.next_position += 1
        if front:
            self.queue.appendleft(pending)
        else:
            self.queue.append(pending)
        self.record.queued = len(self.queue)
        return self.log.emit(
            [("input.queued", {"input_id": pending.input_id, "position": list(self.queue).index(pending) + 1})],
            [pending.write("queued")],
        )

    async def _previous_ack(self, client_msg_id: str) -> dict[str, Any] | None:
        if client_msg_id in self.recent_acks:
            return dict(self.recent_acks[client_msg_id])
        row = await self.services.store.read(lambda conn: queries.find_input(conn, self.thread_id, client_msg_id))
        if row is None:
            return None
        ack = PendingInput.from_row(row).ack()
        self.recent_acks[client_msg_id] = ack
        return dict(ack)

    async def op_configure(self, reply: Reply, config: Any) -> dict[str, Any]:
        self.check_alive()
        updated, changed = reconfigure(self.record.config, config, self.tools)
        await self.log.ready()
        self.record.config = updated
        unit = self.log.emit_one(
            "thread.configured", {"config": updated.to_dict(), "changed": changed}, ops.upsert_thread(self.record.to_row())
        )
        await unit.wait()
        return self.record.to_object()

    async def op_history(self, reply: Reply) -> list[dict[str, Any]]:
        return list(self.history)

    async def op_interrupt(self, reply: Reply, clear_queue: bool = False) -> Any:
        return await control.interrupt(self, reply, clear_queue)

    async def op_pause(self, reply: Reply) -> Any:
        return await control.pause(self, reply)

    async def op_resume(self, reply: Reply) -> Any:
        return await control.resume(self)

    async def op_kill(self, reply: Reply, reason: str = "killed") -> Any:
        return await control.kill(self, reply, reason)

    async def op_shutdown(self, reply: Reply) -> Any:
        return await control.shutdown(self, reply)

    async def op_compact(self, reply: Reply) -> dict[str, Any]:
        self.check_alive()
        if self.turn is not None:
            raise Conflict("a turn is running; compact between turns (interrupt or wait)")
        return await control.compact(self)

    # used by control.py --------------------------------------------------------------

    def park(self, turn: Turn, reply: Reply, kind: str, **extra: Any) -> object:
        """Answer ``reply`` once ``turn`` has ended (``extra`` joins the result)."""
        self.parked.append((turn, reply, kind, extra))
        return control.PARKED


__all__ = ["ActorServices", "ThreadActor", "TurnOutcome"]
