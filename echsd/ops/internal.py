"""Operations the daemon's own parts send each other (and other nodes): not on the wire.

A tree kill is ``thread.kill_one`` on each thread, top down; a deletion retires every thread,
removes them in one unit, then disposes of each where it runs; a child's turn end reaches
its parent as ``thread.child_finished``, wherever each runs. Being ops, they go through the
router like any client's request: it alone decides where they run.
"""

from __future__ import annotations

from typing import Any

from echsd.ops.base import Op, Where, arg, op


@op("thread.kill_one", Where.OWNER, wire=False, result="`{thread_id, state, turn_id?, children}`")
class KillOne(Op):
    """Kill one thread (a tree kill's step): its answer lists its children, final from then on."""

    thread_id: str = arg()
    reason: str = arg("killed")


@op("thread.retire", Where.OWNER, wire=False, result="`{thread_id, children}`")
class Retire(Op):
    """Hold a thread still for its deletion (refused while it runs); ``retired=False`` undoes it."""

    thread_id: str = arg()
    retired: bool = arg(True)


@op("node.dispose", Where.NODE, wire=False, result="`{}`", version=2)
class Dispose(Op):
    """Deleted threads' records and workers go, on the node that ran them (named before the
    deletion: their rows, owner included, are gone), and with them their worktrees and
    snapshot refs."""

    node: str = arg()
    thread_ids: list[str] = arg()
    root: str = arg()  # the thread whose deletion was asked
    keep_worktrees: bool = arg(False)


@op("thread.forget_child", Where.OWNER, wire=False)
class ForgetChild(Op):
    """A child was deleted: its parent stops listing it."""

    thread_id: str = arg()
    child_id: str = arg()


@op("thread.child_finished", Where.OWNER, wire=False)
class ChildFinished(Op):
    """A child's turn ended (or it was killed idle): its parent logs ``subagent.completed`` and
    its waiting ``wait_agents`` wakes."""

    thread_id: str = arg()  # the parent
    data: dict[str, Any] = arg()  # agent_id, turn_id, status, final_message


@op("thread.adopt_child", Where.OWNER, wire=False, result="the child's thread object", version=2)
class AdoptChild(Op):
    """Create a child through its parent's worker (which refuses it while being killed or deleted)."""

    thread_id: str = arg()  # the parent
    config: dict[str, Any] = arg()  # thread.create's config params
    extra: dict[str, Any] | None = arg()  # e.g. the agent type of a spawn_agent child, its worktree
    placed: list[Any] | None = arg()  # [node, lease epoch]: run by that node from its creation
    loosen_policy: bool | None = arg()  # the caller asked for a policy looser than the parent's
    child_id: str | None = arg()  # the child's id, chosen already (its worktree was made for it)


@op("node.take", Where.NODE, wire=False, result="`{}`")
class Take(Op):
    """Run these threads, created for this node by another one."""

    node: str = arg()
    thread_ids: list[str] = arg()


@op("thread.agent_view", Where.HERE, wire=False, result="`{agent_id, agent_type, state, status, final_message, parent}`")
class AgentView(Op):
    """How a sub-agent stands, as its parent's tools see it (from memory, or the store)."""

    thread_id: str = arg()


@op("thread.shutdown", Where.OWNER, wire=False)
class Shutdown(Op):
    """The daemon stops: interrupt the running turn (reason ``shutdown``) and end the worker."""

    thread_id: str = arg()


@op("thread.fork_source", Where.OWNER, wire=False, result="`{config, items, turn_ids, turn, turn_id, compacted_turns, snapshot}`")
class ForkSource(Op):
    """What a fork of this thread starts from: its config and history up to a turn, and the
    snapshot taken when that turn ended (None outside a git repository)."""

    thread_id: str = arg()
    at_turn: int | None = arg()
    turn_id: str | None = arg()
