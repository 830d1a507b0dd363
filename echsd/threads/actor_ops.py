"""The thread actor's op handlers: one ``@handles`` method per op its worker answers.

Part of ``ThreadActor`` (a mixin, like the core's ``control.py``): the actor's IO rules are
in ``actor.py`` (room in the writer, the core decides, the unit commits, then answer or
park); this file is the table of what each op does inside that frame. An op that is one
change of the thread's state needs no method here: a ``@decides`` method of the core is
run the generic way (``ThreadActor._decide``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import trio

from echsd.events import EventData, SubagentCompleted
from echsd.errors import BadRequest, EchsError, Internal, Unavailable
from echsd.logs import get_logger
from echsd.ops.daemon import RegisterTools
from echsd.ops.internal import AdoptChild, ChildFinished, ForgetChild, ForkSource, KillOne, Retire, Shutdown
from echsd.ops.threads import Compact, Configure, Get, History, Interrupt, Pause, Resume, Send
from echsd.ops.workspace import Merge, Undo
from echsd.paging import page_of
from echsd.store import queries
from echsd.threads.config import CHAIN_REFUSED
from echsd.threads.effects import Park
from echsd.threads.handlers import handles
from echsd.threads.inputs import PendingInput
from echsd.threads.policy import child_policy
from echsd.threads.mailbox import Reply
from echsd.threads.oversize import USABLE_SHARE, input_refusal, input_tokens
from echsd.threads.prompt import input_budget
from echsd.threads.state import parse_mode

if TYPE_CHECKING:
    from echsd.store import Unit
    from echsd.threads.config import ThreadConfig
    from echsd.threads.core import ThreadCore
    from echsd.threads.effects import Effects
    from echsd.threads.eventlog import ThreadLog
    from echsd.threads.providers import RemoteProviders
    from echsd.threads.record import ThreadRecord
    from echsd.threads.services import ActorServices
    from echsd.threads.turnwork import TurnWork
    from echsd.threads.workspacedecisions import UndoPlan
    from echsd.tools.registry import ToolRegistry

log = get_logger(__name__)

LATER = object()  # a handler's result meaning "a background task answers the reply"


class ActorOps:
    if TYPE_CHECKING:  # provided by ThreadActor
        record: ThreadRecord
        services: ActorServices
        tools: ToolRegistry
        providers: RemoteProviders
        turnwork: TurnWork
        _nursery: trio.Nursery | None
        _compaction_scope: trio.CancelScope | None

        @property
        def core(self) -> ThreadCore: ...

        @property
        def log(self) -> ThreadLog: ...

        @property
        def thread_id(self) -> str: ...

        def commit(self, effects: Effects) -> Unit: ...

        async def _decided(self, result: Any, effects: Effects) -> Any: ...

        async def _emit(self, kind: type[EventData], data: dict[str, Any]) -> None: ...

        async def _compact(self, reply: Reply, token: int, items: list[dict[str, Any]], config: ThreadConfig, scope: trio.CancelScope) -> None: ...

        async def _start_next(self) -> None: ...

    @handles(Send)
    async def op_send(self, op: Send, reply: Reply) -> dict[str, Any]:
        self.core.check_alive()
        if self.core.config.chain and not self.services.client.endpoint.stores_responses:
            raise BadRequest(CHAIN_REFUSED)  # set before the daemon moved to such an endpoint
        client_msg_id, text = op.client_msg_id, op.text
        window, room = input_budget(self.core.config, self.services.catalog, self.tools, subagent=self.core.parent is not None, share=USABLE_SHARE)
        too_large = input_refusal(self.core.config.model, window, room, input_tokens(text, op.attachments or ()))
        if too_large is not None:
            raise BadRequest(too_large)  # it could never be sent: refused, never stored
        if client_msg_id is not None:
            previous = self.core.previous_ack(client_msg_id, text)
            if previous is None and await self._load_stored_ack(client_msg_id):
                previous = self.core.previous_ack(client_msg_id, text)
            if previous is not None:
                return previous
        input_mode = parse_mode(op.mode)
        idle = self.core.turn is None and not self.core.queued
        context = await self.services.turn_context(self.core.config) if idle else None  # used if the input starts a turn
        await self.log.ready()
        ack, effects = self.core.receive_input(text, input_mode, client_msg_id, attachments=op.attachments or (), steps=op.steps, context=context)
        unit = self.commit(effects)
        # Shielded: once the input is in a unit, its ack must reach the client even if the
        # actor is being torn down meanwhile (e.g. its turn task crashed).
        with trio.CancelScope(shield=True):
            await unit.wait()
        return ack

    async def _load_stored_ack(self, client_msg_id: str) -> bool:
        """Remember an acknowledgement from an earlier run of the daemon, if there is one."""
        thread_id = self.thread_id
        row = await self.services.store.read(lambda conn: queries.find_input(conn, thread_id, client_msg_id))
        if row is None:
            return False
        self.core.remember_ack(client_msg_id, PendingInput.from_row(row).ack(), row.text)
        return True

    @handles(Configure)
    async def op_configure(self, op: Configure, reply: Reply) -> dict[str, Any]:
        self.core.check_alive()
        await self.log.ready()
        rules = self.services.config_rules(self.tools.names())
        await self.commit(self.core.configure(op.config, rules)).wait()
        return self.record.to_object()

    @handles(History)
    async def op_history(self, op: History, reply: Reply) -> Any:
        """The items; with ``offset``/``limit``, one page (see ``page_of``)."""
        items = list(self.core.history or ())
        if op.offset is None and op.limit is None:
            return items
        return page_of(items, op.offset, op.limit, self.services.tuning.max_message_bytes // 2, lambda item: item)

    @handles(Interrupt)
    async def op_interrupt(self, op: Interrupt, reply: Reply) -> Any:
        await self.log.ready()
        return await self._decided(*self.core.interrupt(bool(op.clear_queue)))

    @handles(Pause)
    async def op_pause(self, op: Pause, reply: Reply) -> Any:
        await self.log.ready()
        return await self._decided(*self.core.pause())

    @handles(Resume)
    async def op_resume(self, op: Resume, reply: Reply) -> Any:
        await self.log.ready()
        return await self._decided(*self.core.resume())

    @handles(KillOne)
    async def op_kill_one(self, op: KillOne, reply: Reply) -> Any:
        """One step of a tree kill: the answer names the children, final once it is killed."""
        if not self.core.alive:
            return {"thread_id": self.thread_id, "state": self.core.state.value, "already": True, "children": list(self.core.children)}
        await self.log.ready()
        result, effects = self.core.kill(op.reason)
        answer = await self._decided(result, effects)
        if not isinstance(result, Park):
            self.services.turn_finished(self.thread_id, None)  # killed idle: no turn end tells its parent
        return answer

    @handles(Shutdown)
    async def op_shutdown(self, op: Shutdown, reply: Reply) -> Any:
        await self.log.ready()
        return await self._decided(*self.core.shutdown())

    @handles(Compact)
    async def op_compact(self, op: Compact, reply: Reply) -> object:
        if self.core.turn is None:  # a history past the window cannot be sent to be compacted either: cut it first
            _window, room = input_budget(self.core.config, self.services.catalog, self.tools, subagent=self.core.parent is not None, share=USABLE_SHARE)
            await self.log.ready()
            effects = self.core.fit_history(room)
            if effects is not None:
                self.commit(effects)
        token, items = self.core.begin_compaction()
        assert self._nursery is not None
        self._compaction_scope = scope = trio.CancelScope()
        self._nursery.start_soon(self._compact, reply, token, items, self.core.config, scope)
        return LATER

    @handles(RegisterTools)
    async def op_register_tools(self, op: RegisterTools, reply: Reply) -> dict[str, Any]:
        """Offer a client's tools to this thread's model while the client stays connected."""
        self.core.check_alive()
        return self.providers.register(op.specs, op.peer)

    @handles(AdoptChild)
    async def op_adopt_child(self, op: AdoptChild, reply: Reply) -> dict[str, Any]:
        placed = (str(op.placed[0]), int(op.placed[1])) if op.placed else None
        return await self.adopt_child(op.config, op.extra, placed, op.child_id, loosen_policy=bool(op.loosen_policy))

    async def adopt_child(
        self,
        config: dict[str, Any],
        extra: dict[str, Any] | None = None,
        placed: tuple[str, int] | None = None,
        child_id: str | None = None,
        *,
        loosen_policy: bool = False,
    ) -> dict[str, Any]:
        """Create a child of this thread. From the mailbox (``thread.create {parent}``) or
        from the turn (``spawn_agent``): either way the check that the thread is not being
        killed and the registration happen with no checkpoint in between. ``placed``: run
        by another node (the router hands it over once this answered). Its policy is never
        looser than this thread's unless ``loosen_policy`` (``policy.py``)."""
        tree = self.services.tree
        self.core.check_accepts_children()
        config = {**config, **child_policy(config, self.core.config, loosen=loosen_policy)}
        built = tree.build_config(config)
        await self.log.ready()
        self.core.check_accepts_children()
        tree.check_room_for_child(self.thread_id)
        record, unit = tree.register_thread(built, self.thread_id, extra, placed, child_id)
        self.core.add_child(record.thread_id)
        await unit.wait()
        return record.to_object()

    @handles(Retire)
    async def op_retire(self, op: Retire, reply: Reply) -> dict[str, Any]:
        """Hold still for ``thread.delete`` (refused while a turn runs); the answer names the
        children (final: a retired thread takes none) and the node that runs it."""
        self.core.retire(op.retired)
        return {"thread_id": self.thread_id, "children": list(self.core.children), "node": self.record.node}

    @handles(ForgetChild)
    async def op_forget_child(self, op: ForgetChild, reply: Reply) -> None:
        self.core.forget_child(op.child_id)

    @handles(ChildFinished)
    async def op_child_finished(self, op: ChildFinished, reply: Reply) -> None:
        """A sub-agent's turn ended (here or on another node): tell this thread's clients
        (``subagent.completed``), and wake a ``wait_agents`` waiting on it."""
        self.services.wake_waiters(str(op.data.get("agent_id")))
        if self.core.alive:
            await self._emit(SubagentCompleted, op.data)

    # ---- the thread's files: undo, merge, a fork's source (git work runs as a child task) ----

    @handles(Undo)
    async def op_undo(self, op: Undo, reply: Reply) -> object:
        self.core.begin_workspace("an undo")
        try:
            plan = self.core.plan_undo(op.turns, op.turn_id)
        except BaseException:
            self.core.end_workspace()
            raise
        self._in_background(reply, self._undo(reply, plan, bool(op.force)))
        return LATER

    async def _undo(self, reply: Reply, plan: UndoPlan, force: bool) -> None:
        files = await self.turnwork.undo(plan, force, dict(self.core.extra))
        await self.log.ready()
        result, effects = self.core.finish_undo(plan, files)
        await self.commit(effects).wait()
        reply.set(result)

    @handles(Merge)
    async def op_merge(self, op: Merge, reply: Reply) -> object:
        self.core.begin_workspace("a merge")
        self._in_background(reply, self._merge(reply))
        return LATER

    async def _merge(self, reply: Reply) -> None:
        """Into the parent's cwd (wherever the parent runs), or the work tree the thread's
        worktree was made from."""
        extra = dict(self.core.extra)
        worktree = self.core.worktree
        if self.core.parent is not None:
            parent = await self.services.ops.run(Get(thread_id=self.core.parent))
            target, target_worktree = str(parent["config"]["cwd"]), (parent.get("worktree") or {}).get("path")
        else:
            target, target_worktree = str((worktree or {}).get("origin") or self.core.config.cwd), None
        merged = await self.services.workspaces.merge(self.thread_id, extra, target, target_worktree)
        reply.set({"thread_id": self.thread_id, **merged.to_dict()})

    def _in_background(self, reply: Reply, work: Any) -> None:
        """Run git work as a child task holding the thread still; its errors answer ``reply``."""
        assert self._nursery is not None

        async def run() -> None:
            try:
                await work
            except EchsError as exc:
                reply.fail(exc)
            except Exception as exc:
                log.exception("workspace operation failed", thread_id=self.thread_id)
                reply.fail(Internal(f"{type(exc).__name__}: {exc}"))
            finally:
                self.core.end_workspace()
                reply.fail(Unavailable("the thread's worker stopped before the operation ended"))  # if not answered yet
            await self._start_next()

        self._nursery.start_soon(run)

    @handles(ForkSource)
    async def op_fork_source(self, op: ForkSource, reply: Reply) -> dict[str, Any]:
        return self.core.fork_source(op.at_turn, op.turn_id)
