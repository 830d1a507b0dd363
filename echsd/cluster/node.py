"""``ClusterNode``: this daemon as one node of several sharing a PostgreSQL store.

It joins (``join``: a new incarnation, which leases it its own threads), then runs: the
lease keeper, an OS thread that renews the lease every ``lease_s / 3`` whatever the event
loop is doing (``lease.py``); the heartbeat, which adopts the threads of nodes whose lease
ran out and acts on a lost lease; the LISTEN connection; the event relay; the request
forwarder. It is the router's ``RemoteNodes``: an op the router sends elsewhere goes
through the forwarder, and an op another node sends here runs as the router's local part
(``run_here``).

Losing the lease (another node adopted this incarnation, or the database was out of reach
for a whole lease) stops every thread here at once, then the node joins again under a new
incarnation, taking back only what nobody took.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, TypeVar

import psycopg
import trio

from echsd.cluster import nodes
from echsd.blackboard.board import Blackboard
from echsd.cluster.channels import ANSWERS, BLACKBOARD, EVENTS, NOTICES, REQUESTS
from echsd.cluster.forwarding import Forwarder
from echsd.cluster.guard import LeaseGuard
from echsd.cluster.lease import LeaseKeeper
from echsd.cluster.listener import Listener
from echsd.cluster.relay import EventRelay
from echsd.errors import EchsError, NotFound, Unavailable
from echsd.logs import get_logger
from echsd.ops.base import Op
from echsd.store import Store, queries
from echsd.store.errors import StoreUnavailable
from echsd.store.postgres.connection import PgConn
from echsd.store.postgres.store import PgStore, application_name
from echsd.store.store import first_line
from echsd.threads.hub import EventHub
from echsd.threads.lease import Lease
from echsd.threads.supervisor import Supervisor

if TYPE_CHECKING:
    from echsd.router.router import ThreadRouter

log = get_logger(__name__)
T = TypeVar("T")
FORWARD_TIMEOUT_S = 10.0
REJOIN_FIRST_S = 0.25  # the first wait before joining again; doubling up to REJOIN_MAX_S
REJOIN_MAX_S = 5.0


class ClusterNode:
    def __init__(self, store: PgStore, hub: EventHub, board: Blackboard, lease: Lease, lease_s: float, address: str = "") -> None:
        self.store: Store = store
        self._url = store.url
        self.node_id = store.node_id
        self.lease = lease  # this node's: changed here alone (joined, lost); read by the guard, the keeper, the supervisor
        self.lease_s = lease_s
        self.address = address
        self.epoch: int | None = None  # the incarnation joined last (the lease's while held)
        self.guard = LeaseGuard(self.node_id, lease, self._fenced)
        self.relay = EventRelay(store, hub, self._is_local, self.node_id)
        self._supervisor: Supervisor | None = None
        self._router: ThreadRouter | None = None
        self.forwarder = Forwarder(store, self.node_id, self._serve)
        self._conn = PgConn(store.url, application_name(self.node_id) + " membership")
        self._limiter = trio.CapacityLimiter(1)
        self._lost = trio.Event()
        self.keeper = LeaseKeeper(store.url, application_name(self.node_id) + " lease", self.node_id, lease, lease_s, self._lease_lost)
        self.board = board
        board.share(lambda seq: ("SELECT pg_notify(?, ?)", (BLACKBOARD, str(seq))))
        self.adoptions = 0  # threads adopted from other nodes (status, tests)

    # -- joining -------------------------------------------------------------------------------

    async def join(self) -> int:
        """Register a new incarnation; returns its epoch (the threads leased to it)."""
        self.epoch = await self._db(nodes.register, self.node_id, self.lease_s, self.address)
        self.lease.granted(self.epoch)
        self.keeper.joined()
        log.info("cluster_joined", node_id=self.node_id, epoch=self.epoch, lease_s=self.lease_s)
        return self.epoch

    def attach(self, supervisor: Supervisor, router: ThreadRouter) -> None:
        self._supervisor = supervisor
        self._router = router
        self.store.writer.guard = self.guard

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        url = self._url
        listener = Listener(
            url,
            application_name(self.node_id) + " listen",
            {
                EVENTS: self.relay.on_notice,
                NOTICES: self.relay.on_live_notice,
                REQUESTS: self.forwarder.on_request,
                ANSWERS: self.forwarder.on_answer,
                BLACKBOARD: self.board.on_grown,
            },
            self._reconnected,
        )
        async with trio.open_nursery() as nursery:
            await nursery.start(listener.run)
            await nursery.start(self.relay.run)
            await nursery.start(self.forwarder.run)
            await nursery.start(self.board.follow)
            self.board.on_grown()  # what other nodes wrote between the board's load and LISTEN
            self.keeper.start()
            nursery.start_soon(self._heartbeat)
            task_status.started()

    def close(self) -> None:
        """On a clean stop the lease is kept until it expires: a node restarted within it
        takes its threads straight back (their work is often bound to this host's files);
        one that stays away has them adopted elsewhere."""
        self.keeper.stop()
        self._conn.close()

    # -- the lease -----------------------------------------------------------------------------

    async def _heartbeat(self) -> None:
        """The loop's side of the lease: the keeper renews it; here a lost lease (or one
        not renewed for a whole ``lease_s``) stops this node's threads and joins again, and
        live nodes adopt the threads of expired ones."""
        period = self.lease_s / 3
        while True:
            with trio.move_on_after(period):
                await self._lost.wait()
            if self._lost.is_set():
                await self._rejoin("another node took this node's threads")
                continue
            silent = self.keeper.silent_s()
            if silent > self.lease_s and self._supervisor is not None and self._supervisor.records:
                self._stop_all(f"the database was out of reach for {silent:.0f} s (the lease is {self.lease_s:g} s)")
                self._lost.set()
                continue
            if self.keeper.failure is None:
                await self._adopt_expired()

    def _lease_lost(self) -> None:
        """The keeper found this incarnation adopted by another node."""
        self._stop_all("another node adopted this node's threads")
        self._lost.set()

    async def _adopt_expired(self) -> None:
        try:
            dead = await self._db(nodes.expired)
        except Exception as exc:
            log.warning("cluster_scan_failed", error=repr(exc))
            return
        for node in dead:
            if node == (self.node_id, self.epoch):
                continue
            assert self.epoch is not None
            try:
                adopted = await self._db(nodes.adopt, node, self.node_id, self.epoch)
            except Exception as exc:
                log.warning("cluster_adopt_failed", node=node[0], error=repr(exc))
                continue
            log.warning("cluster_adopted", dead_node=node[0], dead_epoch=node[1], threads=len(adopted))
            self.adoptions += len(adopted)
            if adopted and self._supervisor is not None:
                await self._supervisor.adopt(adopted)
            await self.forwarder.pick_up()

    async def _rejoin(self, reason: str) -> None:
        """Stop everything, then join again and take back this node's threads, retrying
        with backoff while the database is away."""
        self._stop_all(reason)
        delay = REJOIN_FIRST_S
        while True:
            try:
                epoch = await self.join()
                mine = await self.store.read(lambda conn: sorted(queries.leased_threads(conn, epoch)))
                break
            except Exception as exc:
                self.lease.revoked()
                log.warning("cluster_rejoin_failed", error=repr(exc), retry_s=delay)
                await trio.sleep(delay)
                delay = min(delay * 2, REJOIN_MAX_S)
        self._lost = trio.Event()
        if self._supervisor is not None:
            await self._supervisor.adopt(mine)
        await self.forwarder.pick_up()

    def _stop_all(self, reason: str) -> None:
        self.lease.revoked()  # nothing more is written under the old lease
        if self._supervisor is not None:
            self._supervisor.drop(list(self._supervisor.records), reason)

    def _fenced(self, thread_ids: frozenset[str]) -> None:
        """The writer refused writes of these threads: another node holds them now (none:
        the writes were this node's own, from before it lost its lease)."""
        if not thread_ids:
            return
        if self._supervisor is not None:
            self._supervisor.drop(thread_ids, "another node holds the lease now")
        if self.lease.epoch is not None:
            self._lost.set()  # the heartbeat checks the whole lease at once

    def _reconnected(self) -> None:
        self.relay.on_reconnect()
        self.board.on_grown()
        self.forwarder.pick_up_soon()

    def _is_local(self, thread_id: str) -> bool:
        return self._supervisor is not None and thread_id in self._supervisor.records

    async def _db(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn`` on the membership connection; the database being away is ``unavailable``."""
        try:
            return await trio.to_thread.run_sync(fn, self._conn, *args, limiter=self._limiter)
        except psycopg.OperationalError as exc:
            raise StoreUnavailable(f"the cluster's database is out of reach ({first_line(exc)}); try again in a few seconds") from exc

    # -- RemoteNodes (the router's other nodes) ----------------------------------------------

    async def owner_of(self, thread_id: str) -> str:
        owner = await self.store.read(lambda conn: queries.owner_of(conn, thread_id))
        if owner is None:
            raise NotFound(f"no thread {thread_id}")
        node = owner[0] or ""
        if node == self.node_id:
            taking_over = Unavailable(f"thread {thread_id} is being taken over by this node ({node}); try again in a moment")
            taking_over.retry_after_s = 1.0
            raise taking_over
        return node

    async def forward(self, node: str, op: Op, *, check_node: bool = False) -> Any:
        if check_node:
            await self.epoch_of(node)
        return await self.forwarder.forward(node, op)

    async def _serve(self, op: Op) -> Any:
        """A request from another node, answered as the router's local part."""
        if self._router is None:
            raise Unavailable(f"node {self.node_id} is starting")
        return await self._router.run_here(op, forwarded=True)

    async def ask_others(self, op: Op) -> list[Any]:
        """Ask every other live node (approvals live with their thread's node); the
        answers of those that had something (``not_found`` ones are left out)."""
        others = [row.node_id for row in await self._db(nodes.nodes) if row.node_id != self.node_id and row.expires_in_s > 0]
        answers: list[Any] = []
        refusals: list[EchsError] = []

        async def ask(node: str) -> None:
            try:
                answers.append(await self.forwarder.forward(node, op, timeout_s=FORWARD_TIMEOUT_S))
            except NotFound:
                pass
            except EchsError as exc:
                log.warning("cluster_ask_failed", node=node, op=op.op_name, error=exc.message)
                refusals.append(exc)

        async with trio.open_nursery() as nursery:
            for node in others:
                nursery.start_soon(ask, node)
        if not answers and refusals:
            raise refusals[0]  # e.g. the approval was answered already, on its node
        return answers

    async def epoch_of(self, node: str) -> int:
        known = {row.node_id: row for row in await self._db(nodes.nodes)}
        if node not in known:
            raise NotFound(f"no node {node!r} (nodes: {', '.join(sorted(known)) or 'none'})")
        if known[node].expires_in_s <= 0:
            raise Unavailable(f"node {node!r} has not renewed its lease for {-known[node].expires_in_s:.0f} s")
        return known[node].incarnation

    async def nodes(self) -> list[dict[str, Any]]:
        return [row.to_object() for row in await self._db(nodes.nodes)]
