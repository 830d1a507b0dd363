"""The thread actor: the IO shell around one ``ThreadCore``.

Everything that changes a thread arrives in its mailbox and is handled here, one request at
a time, through the op table at the bottom. The rule that keeps this lock-free: a handler
awaits room in the store writer (``log.ready()``), asks the core, and commits the unit the
core returned with no checkpoint in between (core decides -> store commits -> publish); only
then does it await (the commit, a reply). Work that waits on the network (a turn, a
compaction) runs as a child task of the actor, so control requests are answered while it
runs; a control request that must wait for a turn's end (interrupt, pause, kill, shutdown)
parks its reply until the unit closing that turn has committed.

Requests are op values (``echsd.ops``); the actor answers each by its class: one of its
``@handles`` methods (``actor_ops.py``, a mixin of this class), or a ``@decides`` decision
of the core run the generic way (``_decide``). Nothing here waits on another node: what
crosses nodes is the router's.
"""

from __future__ import annotations

import time
from typing import Any

import trio

from echsd.events import EventData, TurnWaiting
from echsd.blackboard.thread_api import ThreadBlackboard
from echsd.codex import ModelError
from echsd.errors import Conflict, EchsError, Internal, UpstreamError
from echsd.logs import get_logger
from echsd.ops.threads import Send
from echsd.store import StoreClosed, Unit, ops, queries
from echsd.threads.actor_ops import LATER, ActorOps
from echsd.threads.agents import ThreadAgents, tree_root
from echsd.threads.compactor import compact_head
from echsd.threads.config import ThreadConfig
from echsd.threads.core import ThreadCore
from echsd.threads.effects import Effects, Park, TurnState
from echsd.threads.handlers import ACTOR, DECISIONS
from echsd.threads.mailbox import Reply, Request, error_reply
from echsd.threads.providers import RemoteProviders
from echsd.threads.record import ThreadRecord
from echsd.threads.services import ActorServices
from echsd.threads.turn import run_turn
from echsd.threads.turnhost import ActorTurnHost
from echsd.threads.turnwork import TurnMark, TurnWork
from echsd.tools.capabilities import ThreadCapabilities
from echsd.tools.registry import ToolRegistry
from echsd.tools.sessions import ExecSessionManager

log = get_logger(__name__)

FOLD_EVERY_DELTAS = 1000  # check retention at a turn's end once this many deltas were logged
TURN_END_GIT_S = 60.0  # a turn's end snapshot, diff and commit, at most (a turn being ended waits for it)


class ThreadActor(ActorOps):
    def __init__(self, record: ThreadRecord, services: ActorServices) -> None:
        self.record = record
        self.services = services
        self.tools = ToolRegistry(services.builtins, services.mcp)
        self.providers = RemoteProviders(record.thread_id, self.tools, services.remote_calls)
        self.sessions = ExecSessionManager(record.thread_id, events=_SessionLog(self))
        record.activity.processes = self.sessions
        self.turnwork = TurnWork(record.thread_id, services.workspaces)
        agents = ThreadAgents(
            record.thread_id,
            services.tree,
            lambda: self.core.config,
            lambda: list(self.core.children),
            services.agent_types,
            self.adopt_child,
            self._emit,
            services.catalog,
            services.subagent_slots,
            services.ops,
            services.workspaces,
            record.activity,
        )
        self.caps = ThreadCapabilities(
            sessions=self.sessions,
            plan=_Plan(self),
            agents=agents,
            blackboard=ThreadBlackboard(services.blackboard, record.thread_id, record.core.parent, self._steer),
        )
        self.parked: dict[str, list[tuple[Reply, Park]]] = {}  # turn id -> replies waiting for its end
        self._nursery: trio.Nursery | None = None
        self._receive_scope: trio.CancelScope | None = None
        self._turn_scope: trio.CancelScope | None = None
        self._compaction_scope: trio.CancelScope | None = None

    @property
    def core(self) -> ThreadCore:
        return self.record.core

    @property
    def log(self):  # noqa: ANN201 - ThreadLog
        return self.record.log

    @property
    def thread_id(self) -> str:
        return self.record.thread_id

    # ---- lifecycle -------------------------------------------------------------------

    async def run(self, crashed: BaseException | None = None) -> None:
        async with trio.open_nursery() as sessions:  # the exec sessions' tasks live here
            self.sessions.run_in(sessions)
            try:
                await self._run(crashed)
            finally:
                with trio.CancelScope(shield=True):
                    await self.sessions.close("the thread's worker stopped")

    async def _run(self, crashed: BaseException | None) -> None:
        await self._load(crashed)
        current: Request | None = None
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                await self._start_next()
                while not self.core.stopping:
                    with trio.CancelScope() as self._receive_scope:
                        current = await self.record.mailbox_receive.receive()
                    if current is None or self._receive_scope.cancelled_caught:
                        continue
                    await self._handle(current)
                    current = None
        except BaseException as exc:
            if current is not None:
                error_reply(current.reply, exc)
            for waiting in self.parked.values():
                for reply, _park in waiting:
                    error_reply(reply, exc)
            raise

    async def _load(self, crashed: BaseException | None) -> None:
        """Load history and waiting inputs; the core closes whatever a crash left open."""
        store = self.services.store
        thread_id = self.thread_id
        if crashed is not None:
            await store.writer.flush()  # what the crashed incarnation emitted is on disk first
        (items, turn_ids), inputs, row = await store.read(lambda conn: queries.load_for_recovery(conn, thread_id))
        if crashed is not None and row is not None:  # the store is the truth after a crash
            self.record.core = ThreadCore.from_row(row, children=self.core.children)
        await self.log.ready()
        effects = self.core.recover(items, inputs, None if crashed is None else f"{type(crashed).__name__}: {crashed}", turn_ids)
        if effects.events or effects.statements:
            await self.commit(effects).wait()
        if effects.turn_end is not None:  # the turn a restart or a crash closed: a waiting parent wakes
            self.services.turn_finished(self.thread_id, effects.turn_end)

    def _wake(self) -> None:
        if self._receive_scope is not None:
            self._receive_scope.cancel()

    async def _handle(self, request: Request) -> None:
        op = request.op
        try:
            handler = ACTOR.get(type(op))
            if handler is not None:
                result = await handler(self, op, request.reply)
            elif type(op) in DECISIONS:
                result = await self._decide(op)
            else:
                raise Internal(f"a thread's worker does not answer {op.op_name}")
        except EchsError as exc:
            request.reply.fail(exc)
            return
        except Exception as exc:  # a bug in one op answers that op; the worker goes on
            log.exception("thread operation failed", thread_id=self.thread_id, op=op.op_name)
            request.reply.fail(Internal(f"{op.op_name} failed: {type(exc).__name__}: {exc}"))
            return
        if isinstance(result, Park):
            self.parked.setdefault(result.turn_id, []).append((request.reply, result))
        elif result is not LATER:
            request.reply.set(result)

    # ---- commit: the one way decisions reach the store and the world ---------------------

    def commit(self, effects: Effects) -> Unit:
        """Submit the core's unit, then act on it (sync: call right after ``log.ready()``)."""
        statements = effects.statements
        tuning = self.services.tuning
        if effects.turn_end is not None and self.log.fold_due(FOLD_EVERY_DELTAS, tuning.retained_delta_bytes // 4):
            # Retention: the turn's items hold the full text, so old deltas can go (as a gap).
            fold = ops.fold_deltas(self.thread_id, keep=tuning.retained_deltas, keep_bytes=tuning.retained_delta_bytes)
            statements = [*statements, fold]
        unit = self.log.emit(effects.events, statements)
        if effects.cancel_turn and self._turn_scope is not None:
            self._turn_scope.cancel()
        if effects.cancel_compaction and self._compaction_scope is not None:
            self._compaction_scope.cancel()
        if effects.start_turn is not None:
            self._spawn_turn(effects.start_turn)
        return unit

    async def _decide(self, op: Any) -> dict[str, Any]:
        """A ``@decides`` op: room in the writer, the core's decision, its commit; the answer
        is the thread object as it is then."""
        self.core.check_alive()
        await self.log.ready()
        await self.commit(DECISIONS[type(op)](self.core, op)).wait()
        return self.record.to_object()

    async def _decided(self, result: Any, effects: Effects) -> Any:
        """Commit a control decision; answer once committed (or park until the turn's end)."""
        unit = self.commit(effects)
        if isinstance(result, Park):
            return result
        await unit.wait()
        await self._release_sessions(None, False, self.core.state.value, None)
        return result

    # ---- turns -----------------------------------------------------------------------

    def _spawn_turn(self, turn: TurnState) -> None:
        assert self._nursery is not None
        self._turn_scope = scope = trio.CancelScope()
        self._nursery.start_soon(self._run_turn, turn, scope)

    async def _run_turn(self, turn: TurnState, scope: trio.CancelScope) -> None:
        host = ActorTurnHost(
            core=self.core,
            log=self.log,
            commit=self.commit,
            turn_id=turn.turn_id,
            client=self.services.client,
            tuning=self.services.tuning,
            tools=self.tools,
            caps=self.caps,
            approvals=self.services.approvals,
            limits=self.services.limits,
            activity=self.record.activity,
            approval=self.services.approval,
        )
        status, error = "error", {"code": "internal", "message": "the turn was cancelled"}
        activity = self.record.activity
        mark: TurnMark | None = None
        with scope:
            mark = await self._turn_snapshot(turn)
            if self.core.parent is not None:  # a sub-agent's turn takes one of the daemon's slots
                slots, tree = self.services.subagent_slots, tree_root(self.services.tree, self.thread_id)
                if not slots.free_for(tree):
                    reason = f"{slots.total} sub-agent turns are running (max_running_subagents)"
                    activity.slot_since, activity.slot_reason = time.time(), reason
                    await self._emit(TurnWaiting, {"turn_id": turn.turn_id, "reason": reason})
                async with slots.held(self.thread_id, tree):
                    activity.slot_since = activity.slot_reason = None
                    status, error = await run_turn(host)
            else:
                status, error = await run_turn(host)
        activity.turn_ended()
        with trio.CancelScope(shield=True):
            diff = work = None
            if mark is not None and turn.end_reason != "shutdown":  # a stopping daemon has no time for git
                with trio.move_on_after(TURN_END_GIT_S):
                    diff, work = await self.turnwork.ended(turn.turn_id, turn.number, mark, self.core.extra)
            await self.log.ready()
            effects = self.core.finish_turn(status, error, partial="".join(host.partial), diff=diff, work=work)
            self._turn_scope = None
            await self.commit(effects).wait()
            end = effects.turn_end
            assert end is not None
            await self._release_sessions(end.turn_id, end.status == "interrupted", end.state, end.reason)
            for reply, park in self.parked.pop(end.turn_id, []):
                reply.set(park.answer(self.thread_id, end))
            self.services.turn_finished(self.thread_id, end)
        await self._start_next()
        if self.core.stopping:
            self._wake()

    async def _turn_snapshot(self, turn: TurnState) -> TurnMark | None:
        """The cwd's state as the turn starts (its diff and undo are measured from it)."""
        mark = await self.turnwork.started(turn.turn_id, self.core.config.cwd)
        if mark is not None:
            await self.log.ready()
            effects = self.core.note_snapshot_repo(mark.repo.common_dir)
            if effects is not None:
                self.commit(effects)
        return mark

    async def _release_sessions(self, turn_id: str | None, interrupted: bool, state: str, reason: str | None) -> None:
        """An interrupted turn takes its sessions along; a paused or killed thread, or a
        stopping daemon, all of them."""
        if turn_id is not None:
            await self.sessions.turn_ended(turn_id, interrupted)
        if state in ("paused", "killed") or reason == "shutdown" or self.core.stopping:
            await self.sessions.close(f"the thread was {state}" if state in ("paused", "killed") else "the daemon is stopping")

    async def _steer(self, thread_id: str, text: str) -> Any:
        """Steer another thread (a blackboard note to this thread's parent), wherever it runs."""
        return await self.services.ops.run(Send(thread_id=thread_id, text=text, mode="steer"))

    async def _emit(self, kind: type[EventData], data: dict[str, Any]) -> None:
        """An event that changes no state (e.g. ``subagent.spawned``) on this thread's log."""
        await self.log.ready()
        self.log.emit_one(kind, data)

    async def _start_next(self) -> None:
        context = await self.services.turn_context(self.core.config) if self.core.can_start_next else None
        await self.log.ready()  # no checkpoint when the writer has room
        effects = self.core.next_turn(context)  # checks again: the thread may have moved meanwhile
        if effects is not None:
            self.commit(effects)

    # ---- compaction (a child task: control answers while it waits on the network) ------

    async def _compact(self, reply: Reply, token: int, items: list[dict[str, Any]], config: ThreadConfig, scope: trio.CancelScope) -> None:
        try:
            replacement = None
            with scope:
                replacement = await compact_head(self.services.client, config, items, self.thread_id)
            effects = None
            if replacement is not None:
                await self.log.ready()
                effects = self.core.finish_compaction(token, replacement)
            if effects is None:
                reply.fail(Conflict("the compaction was cancelled (interrupt, pause, kill or shutdown); the history is unchanged"))
            else:
                await self.commit(effects).wait()
                _event, data = effects.events[0]
                reply.set({"thread_id": self.thread_id, "items_before": data["items_before"], "items_after": data["items_after"]})
        except ModelError as exc:
            reply.fail(UpstreamError(f"compaction failed at the model endpoint: {exc.message}"))
        except Exception as exc:
            log.exception("compaction failed", thread_id=self.thread_id)
            reply.fail(Internal(f"compaction failed: {type(exc).__name__}: {exc}"))
        finally:
            self.core.abort_compaction(token)  # no-op when it finished or was cancelled
            if self._compaction_scope is scope:
                self._compaction_scope = None
        await self._start_next()


class _SessionLog:
    """``SessionEvents`` for the thread's exec sessions: their starts and ends are thread
    state (a restart ends the ones left open), so the core decides and logs them."""

    def __init__(self, actor: ThreadActor) -> None:
        self._actor = actor

    async def started(self, session_id: int, turn_id: str, command: str) -> None:
        await self._actor.log.ready()
        self._actor.commit(self._actor.core.session_started(session_id, turn_id, command))

    async def ended(self, session_id: int, reason: str, exit_code: int | None) -> None:
        try:
            await self._actor.log.ready()
        except StoreClosed:
            return  # the daemon is gone past its writer: the next start ends it (recovery)
        self._actor.commit(self._actor.core.session_ended(session_id, reason, exit_code))


class _Plan:
    """``PlanApi`` for ``update_plan``: the plan is thread state, so the core keeps it."""

    def __init__(self, actor: ThreadActor) -> None:
        self._actor = actor

    async def update(self, explanation: str | None, steps: list[dict[str, str]]) -> None:
        await self._actor.log.ready()
        self._actor.commit(self._actor.core.update_plan(explanation, steps))
