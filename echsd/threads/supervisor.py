"""The supervisor: finds, starts, restarts and stops thread actors.

Every thread has a record (loaded eagerly at start); its actor starts on first use, or at
start when it has work left over (an open turn to close, queued input to run). An exception
escaping an actor is logged with its traceback and the actor is restarted from the store;
more than ``restart_limit`` crashes within ``restart_window_s`` and the thread is given up
(requests to it answer ``internal``). Neither ever reaches the daemon or other threads.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

import trio

from echsd.errors import Internal, InvalidState, NotFound, Timeout, Unavailable
from echsd.ids import is_thread_id
from echsd.logs import get_logger
from echsd.store import queries
from echsd.threads.actor import ActorServices, ThreadActor
from echsd.threads.eventlog import ThreadLog
from echsd.threads.mailbox import DEFAULT_TIMEOUT_S, Request, error_reply, first_leaf
from echsd.threads.record import ThreadRecord

log = get_logger(__name__)


class Supervisor:
    def __init__(self, services: ActorServices) -> None:
        self.services = services
        self.records: dict[str, ThreadRecord] = {}
        self._nursery: trio.Nursery | None = None
        self._eager: list[ThreadRecord] = []
        self._closing = False

    # ---- start-up --------------------------------------------------------------------

    async def load(self) -> None:
        """Load every thread's metadata; remember which need their actor right away."""

        def read(conn: Any) -> tuple[list[Any], list[Any], dict[str, int]]:
            return queries.load_threads(conn), queries.load_inputs(conn, None), queries.last_seqs(conn)

        rows, inputs, last_seqs = await self.services.store.read(read)
        pending: dict[str, int] = {}
        for input_row in inputs:
            pending[input_row.thread_id] = pending.get(input_row.thread_id, 0) + 1
        for row in rows:
            record = ThreadRecord.from_row(row)
            record.queued = pending.get(row.thread_id, 0)
            record.log = ThreadLog(row.thread_id, self.services.store.writer, last_seqs.get(row.thread_id, 0))
            self.records[row.thread_id] = record
        for record in self.records.values():
            if record.parent in self.records:
                self.records[record.parent].children.append(record.thread_id)
        self._eager = [
            record
            for record in self.records.values()
            if record.active_turn is not None or (record.thread_id in pending and record.state.value == "idle")
        ]
        log.info("threads loaded", threads=len(self.records), resuming=len(self._eager))

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            for record in self._eager:
                self.ensure_actor(record)
            self._eager = []
            task_status.started()
            await trio.sleep_forever()

    # ---- actors ----------------------------------------------------------------------

    def ensure_actor(self, record: ThreadRecord) -> None:
        if record.actor_started or record.failed:
            return
        if self._nursery is None or self._closing:
            raise Unavailable("the daemon is not accepting work (starting up or shutting down)")
        record.actor_started = True
        self._nursery.start_soon(self._supervise, record, name=f"actor:{record.thread_id}")

    async def _supervise(self, record: ThreadRecord) -> None:
        tuning = self.services.tuning
        crashes: deque[float] = deque()
        crashed: BaseException | None = None
        while True:
            try:
                await ThreadActor(record, self.services).run(crashed)
                record.actor_started = False
                return
            except Exception as exc:
                root = first_leaf(exc)
                log.error("thread worker crashed", thread_id=record.thread_id, exc_info=root)
                now = time.monotonic()
                crashes.append(now)
                while crashes and now - crashes[0] > tuning.restart_window_s:
                    crashes.popleft()
                if len(crashes) > tuning.restart_limit:
                    record.failed = f"worker crashed {len(crashes)} times in {tuning.restart_window_s:g} s: {root!r}"
                    log.error("giving up on thread worker", thread_id=record.thread_id, reason=record.failed)
                    await self._refuse_forever(record)
                    return
                crashed = root

    async def _refuse_forever(self, record: ThreadRecord) -> None:
        async for request in record.mailbox_receive:
            error_reply(request.reply, Internal(f"thread {record.thread_id} is unavailable: {record.failed}"))

    async def call(self, thread_id: str, op: str, timeout_s: float = DEFAULT_TIMEOUT_S, **params: Any) -> Any:
        """Send ``op`` to the thread's actor and wait for its answer."""
        record = self.record(thread_id)
        if record.failed:
            raise Internal(f"thread {thread_id} is unavailable: {record.failed}")
        self.ensure_actor(record)
        request = Request(op, params)
        with trio.move_on_after(timeout_s):
            await record.mailbox_send.send(request)
            return await request.reply.wait(timeout_s)
        raise Timeout(f"thread {thread_id} is busy: its mailbox stayed full for {timeout_s:g} s")

    def record(self, thread_id: Any) -> ThreadRecord:
        if not is_thread_id(thread_id):
            raise NotFound(f"no thread {thread_id!r} (ids look like thr_ + 16 hex digits)")
        record = self.records.get(thread_id)
        if record is None:
            raise NotFound(f"no thread {thread_id}")
        return record

    def add(self, record: ThreadRecord) -> None:
        self.records[record.thread_id] = record
        if record.parent is not None:
            self.records[record.parent].children.append(record.thread_id)

    def descendants(self, thread_id: str) -> list[str]:
        found: list[str] = []
        frontier = list(self.records[thread_id].children)
        while frontier:
            child = frontier.pop(0)
            found.append(child)
            frontier.extend(self.records[child].children)
        return found

    def depth(self, thread_id: str) -> int:
        depth, record = 0, self.records[thread_id]
        while record.parent is not None and record.parent in self.records:
            depth, record = depth + 1, self.records[record.parent]
        return depth

    async def kill(self, thread_id: str) -> dict[str, Any]:
        """Kill a thread and every descendant (parent first, so it cannot spawn meanwhile)."""
        record = self.record(thread_id)
        if record.state.value == "killed":
            raise InvalidState(f"thread {thread_id} is killed")
        killed = []
        for target in [thread_id, *self.descendants(thread_id)]:
            if self.records[target].state.value == "killed":
                continue
            reason = "killed" if target == thread_id else f"ancestor {thread_id} was killed"
            try:
                await self.call(target, "kill", reason=reason)
            except InvalidState:
                continue
            killed.append(target)
        return {"thread_id": thread_id, "killed": killed, "state": record.state.value}

    def turn_finished(self, record: ThreadRecord, outcome: Any) -> None:
        """Hook for a finished turn (sub-agent notifications attach here)."""

    # ---- shutdown --------------------------------------------------------------------

    async def shutdown(self, timeout_s: float = 8.0) -> None:
        """Interrupt running turns (reason ``shutdown``) and stop every actor."""
        self._closing = True
        started = [r for r in self.records.values() if r.actor_started and not r.failed]
        with trio.move_on_after(timeout_s):
            async with trio.open_nursery() as nursery:
                for record in started:
                    nursery.start_soon(self._stop_one, record, timeout_s)
        if self._nursery is not None:
            self._nursery.cancel_scope.cancel()

    async def _stop_one(self, record: ThreadRecord, timeout_s: float) -> None:
        request = Request("shutdown", {})
        try:
            with trio.fail_after(timeout_s):
                await record.mailbox_send.send(request)
                await request.reply.wait(timeout_s)
        except (trio.TooSlowError, Timeout, Exception) as exc:
            log.warning("thread did not stop in time", thread_id=record.thread_id, error=repr(exc))

