"""``Forwarder``: operations on threads another node runs, through the database.

The origin writes a request row (the op's name and its versioned forwarding form, see
``echsd.ops.base.Op.forward_form``) and NOTIFYs the target node in the same transaction; the target runs it as if a local client had asked and writes the answer into
the row, NOTIFYing the origin, which reads it and deletes the row. The row, not the
notification, is the request: a target that was not listening at the time (a restart, a
reconnect) finds the rows addressed to it when it starts listening, and a node that dies
with requests unanswered hands them to whoever adopts its threads (``nodes.adopt``).
Sends are forwarded with a ``client_msg_id`` (``Send.for_forwarding``), so running one twice
(the target died after running it, before answering) delivers it once.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
import trio

from echsd.cluster.channels import ANSWERS, REQUESTS, addressed
from echsd.errors import EchsError, Internal, Timeout
from echsd.logs import get_logger
from echsd.ops.base import Op, OwnerOf, from_forward
from echsd.store import Store, Unit

log = get_logger(__name__)

Handler = Callable[[Op], Awaitable[Any]]
STALE_S = 3600.0  # answered or abandoned rows older than this are removed
PICK_UP_RETRY_S = 0.25  # while the database is away; doubling up to PICK_UP_RETRY_MAX_S
PICK_UP_RETRY_MAX_S = 5.0


def _error_classes() -> dict[str, type[EchsError]]:
    found: dict[str, type[EchsError]] = {}
    pending: list[type[EchsError]] = [EchsError]
    while pending:
        cls = pending.pop()
        found.setdefault(cls.code, cls)
        pending.extend(cls.__subclasses__())
    return found


class Forwarder:
    def __init__(self, store: Store, node_id: str, handler: Handler) -> None:
        self._store = store
        self.node_id = node_id
        self._handler = handler
        self._waiting: dict[str, tuple[trio.Event, list[Any]]] = {}
        self._running: set[str] = set()
        self._nursery: trio.Nursery | None = None
        self.served = 0
        self.forwarded = 0

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started()
            await self.pick_up()
            nursery.start_soon(self._sweep)
            await trio.sleep_forever()

    # -- the origin --------------------------------------------------------------------------

    async def forward(self, target: str, value: Op, timeout_s: float | None = None) -> Any:
        """Run ``value`` on ``target`` and return its answer (or raise its error)."""
        op, encoded = value.forward_form()
        route = value.route()
        thread_id = route.thread_id if isinstance(route, OwnerOf) else None
        timeout_s = value.timeout_s if timeout_s is None else timeout_s
        request_id = f"req_{secrets.token_hex(8)}"
        done = trio.Event()
        slot: list[Any] = []
        self._waiting[request_id] = (done, slot)
        self.forwarded += 1
        try:
            insert = (
                "INSERT INTO requests(request_id, target, origin, thread_id, op, params, created_at) VALUES(?, ?, ?, ?, ?, ?, ?)",
                (request_id, target, self.node_id, thread_id, op, encoded, time.time()),
            )
            notify = ("SELECT pg_notify(?, ?)", (REQUESTS, f"{target} {request_id}"))
            await self._store.writer.commit(Unit(statements=[insert, notify]))
            with trio.move_on_after(timeout_s):
                await done.wait()
            if not done.is_set():
                self._delete(request_id)
                where = f"node {target}, which runs thread {thread_id}," if thread_id else f"node {target}"
                raise Timeout(f"{where} did not answer {op} within {timeout_s:g} s")
        finally:
            self._waiting.pop(request_id, None)
        answer = slot[0]
        if "error" in answer:
            error = answer["error"]
            cls = _error_classes().get(error.get("code"), Internal)
            refusal = cls(str(error.get("message", "")))
            refusal.retry_after_s = error.get("retry_after_s")  # the target's hint, passed on
            raise refusal
        return answer.get("result")

    def on_answer(self, payload: str) -> None:
        address = addressed(payload)
        if address is None or address[0] != self.node_id or address[1] not in self._waiting:
            return
        assert self._nursery is not None
        self._nursery.start_soon(self._collect, address[1])

    async def _collect(self, request_id: str) -> None:
        try:
            row = await self._store.read(lambda conn: conn.execute("SELECT answer FROM requests WHERE request_id = ?", (request_id,)).fetchone())
        except EchsError as exc:  # the database went away again: the origin's wait times out
            log.warning("cluster_answer_unread", request_id=request_id, error=exc.message)
            return
        waiting = self._waiting.get(request_id)
        if row is None or row[0] is None or waiting is None:
            return
        done, slot = waiting
        slot.append(orjson.loads(row[0]))
        done.set()
        self._delete(request_id)

    def _delete(self, request_id: str) -> None:
        try:
            self._store.writer.put_nowait(Unit(statements=[("DELETE FROM requests WHERE request_id = ?", (request_id,))]))
        except (trio.WouldBlock, EchsError):
            pass  # the sweep removes it later

    # -- the target --------------------------------------------------------------------------

    def on_request(self, payload: str) -> None:
        address = addressed(payload)
        if address is None or address[0] != self.node_id or self._nursery is None:
            return
        self._nursery.start_soon(self._serve, address[1])

    def pick_up_soon(self) -> None:
        if self._nursery is not None:
            self._nursery.start_soon(self.pick_up)

    async def pick_up(self) -> None:
        """Serve every request addressed here that has no answer (at start, after an
        adoption, after the listener reconnected); while the database is away, try again
        with backoff."""
        node = self.node_id
        delay = PICK_UP_RETRY_S
        while True:
            try:
                rows = await self._store.read(
                    lambda conn: conn.execute("SELECT request_id FROM requests WHERE target = ? AND answer IS NULL ORDER BY created_at", (node,)).fetchall()
                )
                break
            except EchsError as exc:
                log.warning("cluster_pick_up_failed", error=exc.message, retry_s=delay)
                await trio.sleep(delay)
                delay = min(delay * 2, PICK_UP_RETRY_MAX_S)
        assert self._nursery is not None
        for (request_id,) in rows:
            self._nursery.start_soon(self._serve, request_id)

    async def _serve(self, request_id: str) -> None:
        if request_id in self._running:
            return
        self._running.add(request_id)
        try:
            await self._serve_row(request_id)
        except EchsError as exc:  # the database is away: the row stays, for the next pick-up
            log.warning("cluster_request_not_served", request_id=request_id, error=exc.message)
        finally:
            self._running.discard(request_id)

    async def _serve_row(self, request_id: str) -> None:
        row = await self._store.read(
            lambda conn: conn.execute(
                "SELECT origin, thread_id, op, params FROM requests WHERE request_id = ? AND answer IS NULL", (request_id,)
            ).fetchone()
        )
        if row is None:
            return
        origin, thread_id, op, params = row
        try:
            answer: dict[str, Any] = {"result": await self._handler(from_forward(op, params))}
        except EchsError as exc:
            answer = {"error": {"code": exc.code, "message": exc.message, "retry_after_s": exc.retry_after_s}}
        except Exception as exc:  # never take the node down for one request
            log.exception("cluster_request_failed", op=op, thread_id=thread_id)
            answer = {"error": {"code": Internal.code, "message": f"{op} failed on node {self.node_id}: {exc!r}"}}
        self.served += 1
        update = ("UPDATE requests SET answer = ? WHERE request_id = ?", (orjson.dumps(answer, default=str).decode(), request_id))
        notify = ("SELECT pg_notify(?, ?)", (ANSWERS, f"{origin} {request_id}"))
        await self._store.writer.commit(Unit(statements=[update, notify]))

    async def _sweep(self) -> None:
        while True:
            await trio.sleep(STALE_S / 4)
            cutoff = time.time() - STALE_S
            try:
                await self._store.writer.commit(Unit(statements=[("DELETE FROM requests WHERE created_at < ?", (cutoff,))]))
            except EchsError as exc:
                log.warning("cluster_request_sweep_failed", error=exc.message)
