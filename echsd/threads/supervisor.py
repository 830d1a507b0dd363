"""The supervisor: finds, starts, restarts and stops thread actors; the authority over the tree.

Every thread has a record (loaded eagerly at start); its actor starts on first use, or at
start when it has work left over (an open turn to close, queued input to run). A crashed
worker is restarted from the store, and given up after too many crashes (``restarts``:
requests answer ``unavailable``; ``kill`` still works, see ``given_up``) until the next
request after a cool-down. Neither reaches the daemon or other threads.

The thread tree has one authority. A child is created through its parent's actor (the
mailbox orders it against the parent's kill, and a parent being killed refuses children).
Finished turns are reported to listeners (``on_turn_finished``), the hook a parent waiting
on its sub-agents is woken by, and to the thread's parent (``thread.child_finished``).

Which node or actor answers an op is the router's decision (``echsd.router``); the
supervisor only runs what the router hands it: ``call`` puts an op in a local actor's
mailbox, ``kill_offline`` kills a given-up thread without its worker.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Mapping

import trio

from echsd.agent_types import SHIPPED, AgentType
from echsd.approval_rules import ApprovalSettings
from echsd.blackboard.board import Blackboard
from echsd.codex import ResponsesClient
from echsd.errors import EchsError, InvalidState, NotFound, Timeout, Unavailable
from echsd.events import Event, ThreadCreated, ThreadDeleted
from echsd.ids import is_thread_id, new_thread_id
from echsd.logs import get_logger
from echsd.ops.base import Op
from echsd.ops.internal import ChildFinished, Shutdown
from echsd.settings import Tuning
from echsd.store import Store, Unit, ops
from echsd.threads.account import AccountLimits
from echsd.threads.approvals import ApprovalBook
from echsd.threads.config import SandboxRules, ThreadConfig, new_config
from echsd.threads.core import ThreadCore
from echsd.threads.effects import TurnEnd
from echsd.threads.eventlog import ThreadLog
from echsd.threads.lease import Lease
from echsd.threads.given_up import kill_offline
from echsd.threads.loading import read_threads
from echsd.threads.mailbox import Request
from echsd.threads.record import ThreadRecord
from echsd.threads.restarts import keep_worker
from echsd.threads.services import ActorServices, OpRunner
from echsd.threads.slots import SubagentSlots
from echsd.threads.state import ThreadState
from echsd.threads.workspaces import Workspaces
from echsd.tools.base import Tool
from echsd.tools.process import sandbox_runtime
from echsd.tools.registry import McpToolSource, default_tool_names
from echsd.tools.remote import RemoteCalls

log = get_logger(__name__)

TurnListener = Callable[[str, TurnEnd | None], None]


class Supervisor:
    def __init__(
        self,
        store: Store,
        client: ResponsesClient,
        builtins: Mapping[str, Tool],
        tuning: Tuning,
        *,
        default_model: str,
        blackboard: Blackboard,
        ops: OpRunner,
        workspaces: Workspaces,
        lease: Lease | None = None,
        agent_types: Mapping[str, AgentType] | None = None,
        mcp: McpToolSource | None = None,
        sandbox_rules: SandboxRules | None = None,
        approval: ApprovalSettings | None = None,
        user_agents_md: Path | None = None,
    ) -> None:
        self.store = store
        self.tuning = tuning
        self.default_model = default_model
        self.records: dict[str, ThreadRecord] = {}
        self.approvals = ApprovalBook()
        self.limits = AccountLimits()
        self.remote_calls = RemoteCalls()
        self.services = ActorServices(
            store=store,
            client=client,
            builtins=builtins,
            tuning=tuning,
            tree=self,
            ops=ops,
            turn_finished=self._turn_finished,
            wake_waiters=self._wake_waiters,
            approvals=self.approvals,
            catalog=client.catalog,
            limits=self.limits,
            remote_calls=self.remote_calls,
            agent_types=dict(agent_types or SHIPPED),
            subagent_slots=SubagentSlots(max(1, tuning.max_running_subagents)),
            sandbox_rules=sandbox_rules or SandboxRules(),
            approval=approval or ApprovalSettings(),
            blackboard=blackboard,
            workspaces=workspaces,
            mcp=mcp,
            user_agents_md=user_agents_md,
        )
        self.workspaces = workspaces
        self._turn_listeners: list[TurnListener] = []
        self.node_id = store.node_id
        self.lease = lease or Lease()  # this node's lease (read here; the cluster node changes it)
        self.ops = ops
        self._nursery: trio.Nursery | None = None
        self._eager: list[ThreadRecord] = []
        self._closing = False

    # ---- start-up --------------------------------------------------------------------

    async def load(self) -> None:
        """Load the metadata of every thread this node runs (all of them, or those leased
        under its lease's epoch); remember which need their actor right away."""
        epoch = self.lease.epoch
        self._eager = self._add_records(await self.store.read(lambda conn: read_threads(conn, epoch, None)))
        log.info("threads loaded", threads=len(self.records), resuming=len(self._eager))

    async def adopt(self, thread_ids: list[str]) -> None:
        """Run threads this node has just been leased (another node's, which stopped
        renewing): the same recovery as at start-up."""
        wanted = [thread_id for thread_id in thread_ids if thread_id not in self.records]
        if not wanted or self._closing:
            return
        epoch = self.lease.epoch
        eager = self._add_records(await self.store.read(lambda conn: read_threads(conn, epoch, wanted)))
        for record in eager:
            self.ensure_actor(record)
        log.info("threads adopted", threads=len(wanted), resuming=len(eager))

    def drop(self, thread_ids: frozenset[str] | list[str], reason: str) -> None:
        """Stop running these threads at once (another node holds their lease now): their
        workers are cancelled (sessions and processes with them) and their records go."""
        for thread_id in thread_ids:
            record = self.records.pop(thread_id, None)
            if record is not None:
                record.stop.cancel()
        if thread_ids:
            log.warning("threads dropped", threads=len(thread_ids), reason=reason)

    def _add_records(self, loaded: tuple[list[Any], list[Any], dict[str, int], dict[str, list[str]]]) -> list[ThreadRecord]:
        rows, inputs, last_seqs, children = loaded
        pending: dict[str, int] = {}
        for input_row in inputs:
            pending[input_row.thread_id] = pending.get(input_row.thread_id, 0) + 1
        added = []
        for row in rows:
            core = ThreadCore.from_row(row, pending_inputs=pending.get(row.thread_id, 0), children=children.get(row.thread_id, ()))
            log_ = ThreadLog(row.thread_id, self.store.writer, last_seqs.get(row.thread_id, 0))
            self.records[row.thread_id] = record = ThreadRecord(core, log_, self.node_id)
            added.append(record)
        return [
            record
            for record in added
            if record.core.active_turn is not None or (record.core.queued and record.core.state is ThreadState.IDLE)
        ]

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
        """Start the thread's worker if none runs; a given-up thread is restarted once its
        cool-down has passed (``Unavailable`` before that)."""
        if record.failed is not None:
            if not record.failed.cooled_down():
                raise record.failed.refusal(record.thread_id)
            log.info("restarting a given-up thread worker", thread_id=record.thread_id)
            record.failed.refusing.cancel()  # its supervising task starts a fresh worker
            record.failed = None
            return
        if record.actor_started:
            return
        if self._nursery is None or self._closing:
            raise Unavailable("the daemon is not accepting work (starting up or shutting down)")
        record.actor_started = True
        self._nursery.start_soon(self._supervise, record, name=f"actor:{record.thread_id}")

    async def _supervise(self, record: ThreadRecord) -> None:
        with record.stop:  # cancelled when another node takes the thread (``drop``)
            await keep_worker(record, self.services, self.tuning)

    async def call(self, record: ThreadRecord, op: Op) -> Any:
        """Put ``op`` in the thread's mailbox and wait for the answer (``op.timeout_s``)."""
        self.ensure_actor(record)
        request = Request(op)
        timeout_s = op.timeout_s
        with trio.move_on_after(timeout_s):
            await record.mailbox_send.send(request)
            return await request.reply.wait(timeout_s)
        raise Timeout(f"thread {record.thread_id} is busy: its mailbox stayed full for {timeout_s:g} s")

    async def kill_offline(self, record: ThreadRecord, reason: str) -> dict[str, Any]:
        """Kill a given-up thread without its worker (``given_up``)."""
        answer = await kill_offline(record, self.store, reason)
        self._turn_finished(record.thread_id, None)
        return answer

    def local(self, thread_id: str) -> ThreadRecord | None:
        """The thread's record if this node runs it (the router's question, no one else's)."""
        return self.records.get(thread_id)

    def record(self, thread_id: Any) -> ThreadRecord:
        if not is_thread_id(thread_id):
            raise NotFound(f"no thread {thread_id!r} (ids look like thr_ + 16 hex digits)")
        record = self.records.get(thread_id)
        if record is None:
            raise NotFound(f"no thread {thread_id}")
        return record

    # ---- turns -----------------------------------------------------------------------

    def on_turn_finished(self, listener: TurnListener) -> Callable[[], None]:
        """Call ``listener(thread_id, end)`` after every turn's closing unit has committed,
        and ``listener(thread_id, None)`` when a thread is killed with no turn running.

        Listeners must not block or raise (one that raises is logged and removed). Returns
        a function that removes the listener.
        """
        self._turn_listeners.append(listener)
        return lambda: self._turn_listeners.remove(listener) if listener in self._turn_listeners else None

    def _turn_finished(self, thread_id: str, end: TurnEnd | None) -> None:
        for listener in list(self._turn_listeners):
            try:
                listener(thread_id, end)
            except Exception:
                log.exception("turn listener failed; removing it", thread_id=thread_id)
                self._turn_listeners.remove(listener)
        self._tell_parent(thread_id, end)

    def _wake_waiters(self, thread_id: str) -> None:
        """A turn of ``thread_id`` ended on another node: listeners here re-check it."""
        for listener in list(self._turn_listeners):
            try:
                listener(thread_id, None)
            except Exception:
                log.exception("turn listener failed; removing it", thread_id=thread_id)
                self._turn_listeners.remove(listener)

    def _tell_parent(self, thread_id: str, end: TurnEnd | None) -> None:
        """A sub-agent's turn ended: its parent gets ``subagent.completed`` (through its
        actor, which logs it, wherever it runs), whether or not anyone waits."""
        record = self.records.get(thread_id)
        if record is None or record.core.parent is None or self._closing or self._nursery is None:
            return
        work = (end.work if end is not None else None) or {}
        data = {
            "agent_id": thread_id,
            "turn_id": end.turn_id if end is not None else None,
            "status": end.status if end is not None else "killed",
            "final_message": end.final_text if end is not None else "",
            "branch": work.get("branch", (record.core.worktree or {}).get("branch")),
            "diff_stat": work.get("diff_stat"),
        }
        self._nursery.start_soon(self._tell, ChildFinished(thread_id=record.core.parent, data=data))

    async def _tell(self, op: ChildFinished) -> None:
        try:
            await self.ops.run(op)
        except EchsError as exc:  # a parent killed, deleted or given up meanwhile
            log.info("cannot tell a parent", parent=op.thread_id, child=op.data["agent_id"], error=exc.message)

    # ---- the thread tree (ThreadTree, for the actors) --------------------------------

    def build_config(self, params: Mapping[str, Any]) -> ThreadConfig:
        rules = self.services.config_rules(list(self.services.builtins))
        return new_config(params, default_model=self.default_model, default_tools=default_tool_names(self.services.builtins), rules=rules)

    def depth(self, thread_id: str) -> int:
        """Depth in its tree: kept with each child (ancestors may run on other nodes), else counted here."""
        depth, core = 0, self.records[thread_id].core
        while not isinstance(core.extra.get("depth"), int) and core.parent is not None and core.parent in self.records:
            depth, core = depth + 1, self.records[core.parent].core
        return depth + int(core.extra.get("depth") or 0)

    def check_room_for_child(self, parent_id: str) -> None:
        depth = self.depth(parent_id) + 1
        if depth > self.tuning.max_depth:
            raise InvalidState(f"a child of {parent_id} would be {depth} levels deep; the limit is max_depth={self.tuning.max_depth}")
        live = [child for child in self.records[parent_id].core.children if child not in self.records or self.records[child].core.alive]
        if len(live) >= self.tuning.max_children:
            raise InvalidState(f"thread {parent_id} has {len(live)} live children; the limit is max_children={self.tuning.max_children}")

    def register_thread(
        self,
        config: ThreadConfig,
        parent: str | None,
        extra: dict[str, Any] | None = None,
        placed: tuple[str, int] | None = None,
        thread_id: str | None = None,
        history: tuple[list[dict[str, Any]], list[str | None]] | None = None,
        past: tuple[str, int] | None = None,
    ) -> tuple[ThreadRecord, Unit]:
        """``history``: items (and their turns) the thread starts with, and ``past``: (the
        thread, the last seq) whose events it starts with (a fork's)."""
        if self._closing:
            raise Unavailable("the daemon is shutting down: no new threads")
        thread_id = thread_id or new_thread_id()
        node, epoch = placed or (self.node_id, self.lease.epoch)
        extra = {**(extra or {}), "depth": self.depth(parent) + 1} if parent is not None else extra
        core = ThreadCore(thread_id, parent=parent, created_at=time.time(), state=ThreadState.IDLE, config=config, extra=extra)
        record = ThreadRecord(core, ThreadLog(thread_id, self.store.writer, 0), node)
        self.records[thread_id] = record
        statements = [ops.upsert_thread(core.to_row()), ops.set_owner(thread_id, node, epoch)]
        if history is not None and history[0]:
            statements.append(ops.replace_items(thread_id, list(history[0]), list(history[1])))
        if past is not None and past[1] > 1:
            statements.append(ops.copy_events(past[0], thread_id, past[1]))
        unit = record.log.emit_one(ThreadCreated, {"thread": record.to_object()}, *statements)
        if past is not None:
            record.log.last_seq = max(record.log.last_seq, past[1])  # the copied events come next
        return record, unit

    async def create_root(
        self,
        config: ThreadConfig,
        extra: dict[str, Any] | None = None,
        thread_id: str | None = None,
        history: tuple[list[dict[str, Any]], list[str | None]] | None = None,
        past: tuple[str, int] | None = None,
    ) -> dict[str, Any]:
        """A thread with no parent, run here."""
        await self.store.writer.wait_room()
        record, unit = self.register_thread(config, None, extra, thread_id=thread_id, history=history, past=past)
        await unit.wait()
        return record.to_object()

    def release(self, thread_id: str) -> None:
        """A thread created here for another node (``placed``): that node runs it now."""
        self.records.pop(thread_id, None)

    async def dispose(self, thread_ids: list[str], root: str, keep_worktrees: bool = False) -> None:
        """Deleted threads (their rows are gone) leave: their subscribers get ``thread.deleted``
        (never stored: their logs went with them), their workers end, their worktrees (unless
        ``keep_worktrees``) and snapshot refs go."""
        now = time.time()
        gone = [record for record in (self.records.pop(tid, None) for tid in thread_ids) if record is not None]
        notices = [Event(r.thread_id, r.log.last_seq + 1, ThreadDeleted.type_name, now, {"root": root}) for r in gone]
        if notices:
            await self.store.writer.commit(Unit(notices=notices))
        for record in gone:
            if record.actor_started:
                record.mailbox_send.send_nowait(Request(Shutdown(thread_id=record.thread_id)))  # its actor ends
        await trio.to_thread.run_sync(sandbox_runtime().remove_tmpdirs, [record.thread_id for record in gone])
        async with trio.open_nursery() as nursery:  # their worktrees and snapshot refs
            for record in gone:
                nursery.start_soon(self.workspaces.forget, record.thread_id, dict(record.core.extra), keep_worktrees)

    # ---- shutdown --------------------------------------------------------------------

    async def shutdown(self, timeout_s: float = 8.0) -> None:
        """Interrupt running turns (reason ``shutdown``) and stop every actor."""
        self._closing = True
        started = [r for r in self.records.values() if r.actor_started and r.failed is None]
        with trio.move_on_after(timeout_s):
            async with trio.open_nursery() as nursery:
                for record in started:
                    nursery.start_soon(self._stop_one, record, timeout_s)
        if self._nursery is not None:
            self._nursery.cancel_scope.cancel()

    async def _stop_one(self, record: ThreadRecord, timeout_s: float) -> None:
        request = Request(Shutdown(thread_id=record.thread_id))
        try:
            with trio.fail_after(timeout_s):
                await record.mailbox_send.send(request)
                await request.reply.wait(timeout_s)
        except (trio.TooSlowError, Timeout, Exception) as exc:
            log.warning("thread did not stop in time", thread_id=record.thread_id, error=repr(exc))

