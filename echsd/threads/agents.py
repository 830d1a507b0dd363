"""Sub-agents of one thread (``AgentsApi``): spawn, talk to, wait for, kill, list.

A child is created through its parent's actor (``adopt``, the tree's one authority), gets
its config from an agent type, explicit options and the parent (never a looser tool policy
or more tools than the parent has), and starts on its first message at once. A parent may
steer, wait for and kill only its own descendants. Children may run on other nodes: what
reaches a child (a send, a kill, a look at how it stands) is an op run by the router,
wherever the child runs. ``wait`` is woken by the supervisor's turn-finished callback the
moment a child's turn ends, here or (through ``thread.child_finished``) on another node (no
polling), honours its timeout exactly, and is cancelled with the parent's turn; while it
waits, a sub-agent parent lends its running slot back (``slots.py``), so waiting parents
cannot hold every slot.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Awaitable, Callable, Mapping, Sequence

import trio

from echsd.events import EventData, SubagentSpawned
from echsd.agent_types import ISOLATIONS, AgentType
from echsd.errors import BadRequest, EchsError
from echsd.ids import new_thread_id
from echsd.ops.internal import AgentView
from echsd.ops.threads import Kill, Send
from echsd.threads.activity import Activity
from echsd.ops.workspace import Merge
from echsd.threads.config import EffortCatalog, ThreadConfig
from echsd.threads.policy import POLICY_ORDERS, stricter
from echsd.threads.effects import TurnEnd
from echsd.threads.slots import SubagentSlots
from echsd.tools.base import ToolError

if TYPE_CHECKING:
    from echsd.threads.core import ThreadCore
    from echsd.threads.services import OpRunner, ThreadTree
    from echsd.threads.workspaces import Workspaces

Adopt = Callable[..., Awaitable[dict[str, Any]]]  # (params, extra, placed=None, child_id=None) -> thread object
Emit = Callable[[type[EventData], dict[str, Any]], Awaitable[None]]
MAX_CLIMB = 128  # parents walked up to find a thread's ancestor (the depth limit is at most 100)


def tree_root(tree: ThreadTree, thread_id: str) -> str:
    """The root of ``thread_id``'s tree, as far as this node knows it (sub-agent slots are
    shared fairly between trees)."""
    root = thread_id
    while True:
        try:
            parent = tree.record(root).core.parent
        except EchsError:  # a parent run by another node
            return root
        if parent is None:
            return root
        root = parent


def agent_view(core: ThreadCore) -> dict[str, Any]:
    """How a sub-agent stands, as its parent's tools see it (``thread.agent_view``)."""
    last = core.extra.get("last_turn") or {}
    return {
        "agent_id": core.thread_id,
        "agent_type": core.extra.get("agent_type"),
        "state": core.state.value,
        "status": core.work_status,
        "final_message": core.final_text,
        "branch": (core.worktree or {}).get("branch"),
        "diff_stat": last.get("diff_stat"),
        "parent": core.parent,
    }


def _shown(view: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in view.items() if key != "parent"}


class ThreadAgents:
    def __init__(
        self,
        thread_id: str,
        tree: ThreadTree,
        parent_config: Callable[[], ThreadConfig],
        children: Callable[[], Sequence[str]],
        agent_types: Mapping[str, AgentType],
        adopt: Adopt,
        emit: Emit,
        catalog: EffortCatalog,
        slots: SubagentSlots,
        ops: OpRunner,
        workspaces: Workspaces,
        activity: Activity | None = None,
    ) -> None:
        self.thread_id = thread_id
        self._workspaces = workspaces
        self._activity = activity or Activity()  # the thread's: wait_agents is noted there
        self._slots = slots
        self._ops = ops
        self._catalog = catalog
        self._tree = tree
        self._config = parent_config
        self._children = children
        self._types = agent_types
        self._adopt = adopt
        self._emit = emit

    # ---- AgentsApi ------------------------------------------------------------------------

    async def spawn(self, message: str, options: Mapping[str, Any]) -> dict[str, Any]:
        """A child working on ``message``; with isolation ``worktree`` (asked, or its agent
        type's), in a git worktree of its own made from this thread's cwd as it is now."""
        agent_type = str(options.get("agent_type") or "default")
        if agent_type not in self._types:
            raise ToolError(f"unknown agent_type {agent_type!r}; known: {', '.join(sorted(self._types))}")
        kind = self._types[agent_type]
        isolation = str(options.get("isolation") or kind.isolation or "none")
        if isolation not in ISOLATIONS:
            raise ToolError(f"isolation must be one of {', '.join(ISOLATIONS)} (got {isolation!r})")
        params = self._child_params(kind, options)
        extra: dict[str, Any] = {"agent_type": agent_type}
        child_id, prepared = None, None
        if isolation == "worktree":
            child_id = new_thread_id()
            try:
                prepared = await self._workspaces.prepare(child_id, str(params["cwd"]))
            except EchsError as exc:
                raise ToolError(f"cannot make a worktree for the agent: {exc.message}") from None
            params["cwd"] = prepared.cwd
            if prepared.worktree is not None:
                extra["worktree"] = prepared.worktree
        try:
            child = await self._adopt(params, extra, None, child_id)
        except EchsError as exc:  # limits, a bad model or effort, a parent being killed
            if prepared is not None and child_id is not None:
                await self._workspaces.discard(child_id, prepared.worktree)
            raise ToolError(f"cannot spawn an agent: {exc.message}") from None
        agent_id = str(child["thread_id"])
        await self._emit(SubagentSpawned, {"agent_id": agent_id, "agent_type": agent_type, "config": child["config"], "worktree": child.get("worktree")})
        await self._ops.run(Send(thread_id=agent_id, text=message, mode="send"))
        answer: dict[str, Any] = {"agent_id": agent_id}
        if child.get("worktree"):
            answer.update(branch=child["worktree"]["branch"], worktree=child["worktree"]["path"])
        if prepared is not None and prepared.note:
            answer["note"] = prepared.note
        return answer

    async def merge(self, agent_id: str) -> dict[str, Any]:
        """Merge a finished child's branch into this thread's cwd (its worktree or branch)."""
        return await self._run_on_own(agent_id, Merge(thread_id=agent_id), "merge")

    async def send(self, agent_id: str, message: str, mode: str) -> dict[str, Any]:
        await self._check_own(agent_id)
        try:
            ack: dict[str, Any] = await self._ops.run(Send(thread_id=agent_id, text=message, mode=mode))
        except EchsError as exc:
            raise ToolError(f"cannot send to {agent_id}: {exc.message}") from None
        return ack

    async def wait(self, agent_ids: Sequence[str], timeout_s: float | None, mode: str) -> dict[str, Any]:
        wanted = list(dict.fromkeys(agent_ids))
        for agent_id in wanted:
            await self._check_own(agent_id)
        changed = trio.Event()

        def on_change(thread_id: str, _end: TurnEnd | None) -> None:
            if thread_id in wanted:
                changed.set()

        remove = self._tree.on_turn_finished(on_change)
        self._activity.waiting_for_agents(None, tuple(wanted))
        try:
            async with self._slots.lent(self.thread_id):  # a waiting parent runs nothing: its children may
                with trio.move_on_after(timeout_s if timeout_s is not None else float("inf")) as timer:
                    while True:
                        views = [await self._view(agent_id) for agent_id in wanted]
                        done = [view for view in views if view["status"] != "running"]
                        if done and (mode == "any" or len(done) == len(views)):
                            break
                        await changed.wait()
                        changed = trio.Event()
        finally:
            remove()
            self._activity.waiting_for_agents(None, None)
        if timer.cancelled_caught:
            views = [await self._view(agent_id) for agent_id in wanted]
        return {"agents": [_shown(view) for view in views], "timed_out": timer.cancelled_caught}

    async def kill(self, agent_id: str) -> dict[str, Any]:
        return await self._run_on_own(agent_id, Kill(thread_id=agent_id), "kill")

    async def _run_on_own(self, agent_id: str, op: Any, verb: str) -> dict[str, Any]:
        """``op`` on one of this thread's own children; a refusal is the tool's error."""
        await self._check_own(agent_id)
        try:
            result: dict[str, Any] = await self._ops.run(op)
        except EchsError as exc:
            raise ToolError(f"cannot {verb} {agent_id}: {exc.message}") from None
        return result

    async def list(self) -> list[dict[str, Any]]:
        return [_shown(await self._view(child)) for child in self._children()]

    # ---- helpers --------------------------------------------------------------------------

    async def _view(self, agent_id: str) -> dict[str, Any]:
        try:
            view: dict[str, Any] = await self._ops.run(AgentView(thread_id=agent_id))
        except EchsError as exc:
            raise ToolError(f"cannot reach {agent_id}: {exc.message}") from None
        return view

    async def _check_own(self, agent_id: str) -> None:
        """Walk up from ``agent_id``: one of ours if this thread is an ancestor."""
        current: str | None = agent_id
        for _ in range(MAX_CLIMB):
            if current is None or current == self.thread_id:
                break
            try:
                view = await self._ops.run(AgentView(thread_id=current))
            except EchsError:
                break
            current = view["parent"]
            if current == self.thread_id:
                return
        raise ToolError(f"{agent_id!r} is not one of your agents (only your own sub-agents and theirs)")

    def _child_params(self, agent_type: AgentType, options: Mapping[str, Any]) -> dict[str, Any]:
        """The child's config: explicit options, else the agent type, else the parent; its
        tool policy never looser, its tools never more, than the parent's."""
        parent = self._config()
        tools = options.get("tools")
        if tools is not None:
            if not isinstance(tools, (list, tuple)) or not all(isinstance(name, str) for name in tools):
                raise ToolError("tools must be a list of tool names")
            extra_tools = sorted(set(tools) - set(parent.tools))
            if extra_tools:
                raise ToolError(f"a sub-agent cannot have tools its parent lacks: {', '.join(extra_tools)}")
        elif agent_type.tools is not None:  # a preset narrows the parent's tools
            tools = [name for name in agent_type.tools if name in parent.tools]
        else:
            tools = parent.tools
        policy: dict[str, Any] = {}
        for key, order in POLICY_ORDERS.items():  # the model never loosens its child's policy
            current = getattr(parent, key)
            asked = options.get(key) or agent_type.policy().get(key) or current
            if asked not in order:
                raise ToolError(f"{key} must be one of {', '.join(order)}")
            policy[key] = stricter(key, str(asked), current)
        policy["writable_roots"] = list(parent.writable_roots)
        model = str(options.get("model") or agent_type.model or parent.model)
        params: dict[str, Any] = {
            "cwd": parent.cwd,
            "model": model,
            "instructions": options.get("instructions") or agent_type.instructions or "",
            "tools": list(tools),
            **policy,
        }
        if agent_type.mcp_servers is not None:  # a preset narrows the parent's MCP servers
            params["mcp"] = [name for name in agent_type.mcp_servers if parent.mcp is None or name in parent.mcp]
        elif parent.mcp is not None:
            params["mcp"] = list(parent.mcp)
        if options.get("reasoning") is not None:
            params["reasoning"] = options["reasoning"]  # asked for: checked against the model, strictly
        else:
            inherited = agent_type.reasoning or parent.reasoning
            try:
                params["reasoning"] = self._catalog.validate_effort(model, inherited)
            except BadRequest:
                pass  # the type's or the parent's effort does not fit this model: its default
        return params
