"""Node handlers that change the thread tree: create, kill, delete, and their per-node steps.

A tree spans nodes (a child may run elsewhere), so these walks are made of per-thread ops
the router sends wherever each thread runs: a kill is ``thread.kill_one`` top down (each
thread killed before its children are listed, so none can appear under a killed ancestor);
a deletion retires every thread (parents first: a retired thread takes no new children),
removes them in one unit, then disposes of each on its node.
"""

from __future__ import annotations

from typing import Any

import trio

from echsd.errors import BadRequest, EchsError, InvalidState, NotFound
from echsd.ids import new_thread_id
from echsd.logs import get_logger
from echsd.ops.internal import AdoptChild, Dispose, ForgetChild, KillOne, Retire, Take
from echsd.ops.threads import Create, Delete, Get, Kill
from echsd.router.handlers import answers
from echsd.router.node import LocalNode
from echsd.store import Unit, ops

log = get_logger(__name__)


@answers(Create)
async def create(node: LocalNode, op: Create) -> dict[str, Any]:
    """A child through its parent's worker (routed here: this node runs the parent), placed on
    ``node`` if given; a root on this node (routed here: ``node`` is this one). With
    ``worktree``, its worktree is made first (outside any worker: git takes its time)."""
    config = dict(op.config or {})
    if op.parent is not None:
        node.supervisor.record(op.parent)  # the parent is here (not_found otherwise)
    built = node.supervisor.build_config(config)  # a bad config is refused before any git work
    thread_id, prepared = None, None
    if op.worktree:
        thread_id = new_thread_id()
        prepared = await node.supervisor.workspaces.prepare(thread_id, built.cwd, base=op.base)
        config["cwd"] = prepared.cwd
    elif op.base is not None:
        raise BadRequest("base is the ref a worktree starts from: give worktree too")
    extra = {"worktree": prepared.worktree} if prepared is not None and prepared.worktree is not None else None
    try:
        if op.parent is None:
            created = await node.supervisor.create_root(node.supervisor.build_config(config), extra, thread_id)
        else:
            placed = await node.placement(op.node)  # outside the parent's worker: it never waits on another node
            created = await node.router.run(
                AdoptChild(thread_id=op.parent, config=config, extra=extra, placed=list(placed) if placed else None, child_id=thread_id, loosen_policy=op.loosen_policy)
            )
            if placed is not None:
                node.supervisor.release(created["thread_id"])
                await node.router.run(Take(node=placed[0], thread_ids=[created["thread_id"]]))
    except BaseException:
        if prepared is not None and thread_id is not None:
            with trio.CancelScope(shield=True):
                await node.supervisor.workspaces.discard(thread_id, prepared.worktree)
        raise
    if prepared is not None and prepared.note:
        created = {**created, "note": prepared.note}
    return created


@answers(Take)
async def take(node: LocalNode, op: Take) -> dict[str, Any]:
    await node.supervisor.adopt(list(op.thread_ids))
    return {}


@answers(Kill)
async def kill(node: LocalNode, op: Kill) -> dict[str, Any]:
    """Kill a thread and every descendant; the answer lists the ids killed now."""
    first = await node.router.run(KillOne(thread_id=op.thread_id))
    if first.get("already"):
        raise InvalidState(f"thread {op.thread_id} is killed")
    killed = [op.thread_id]
    await _kill_children(node, first["children"], f"ancestor {op.thread_id} was killed", killed)
    return {"thread_id": op.thread_id, "killed": killed, "state": first["state"]}


async def _kill_children(node: LocalNode, children: list[str], reason: str, killed: list[str]) -> None:
    if not children:
        return
    async with trio.open_nursery() as nursery:
        for child in children:
            nursery.start_soon(_kill_subtree, node, child, reason, killed)


async def _kill_subtree(node: LocalNode, thread_id: str, reason: str, killed: list[str]) -> None:
    try:
        answer = await node.router.run(KillOne(thread_id=thread_id, reason=reason))
    except NotFound:
        return  # deleted meanwhile
    except EchsError as exc:
        log.error("cannot kill thread", thread_id=thread_id, error=exc.message)
        try:  # its children are still ours to kill: read them from the store
            answer = {"already": True, "children": (await node.router.run(Get(thread_id=thread_id)))["children"]}
        except EchsError:
            return
    if not answer.get("already"):
        killed.append(thread_id)
    await _kill_children(node, answer["children"], reason, killed)


@answers(Delete)
async def delete(node: LocalNode, op: Delete) -> dict[str, Any]:
    """Delete a thread and its descendants, history and events: refused while any of them
    runs. Each is retired (it takes nothing more) before a single unit removes them all, so
    nothing can start on a thread being deleted; then each node lets go of its own."""
    top = await node.router.run(Get(thread_id=op.thread_id))
    retired: list[tuple[str, str]] = []  # (thread, its node)
    try:
        frontier = [op.thread_id]
        while frontier:  # parents first: a retired thread takes no new children
            thread_id = frontier.pop(0)
            answer = await node.router.run(Retire(thread_id=thread_id))
            retired.append((thread_id, answer["node"]))
            frontier.extend(answer["children"])
    except BaseException:
        with trio.CancelScope(shield=True):
            for thread_id, _node in retired:
                try:
                    await node.router.run(Retire(thread_id=thread_id, retired=False))
                except EchsError as exc:
                    log.warning("cannot undo a retirement", thread_id=thread_id, error=exc.message)
        raise
    doomed = [thread_id for thread_id, _node in retired]
    await node.store.writer.commit(Unit(statements=[ops.delete_threads(doomed)]))
    by_node: dict[str, list[str]] = {}
    for thread_id, owner in retired:
        by_node.setdefault(owner, []).append(thread_id)
    for owner, thread_ids in by_node.items():
        try:
            await node.router.run(Dispose(node=owner, thread_ids=thread_ids, root=op.thread_id, keep_worktrees=bool(op.keep_worktree)))
        except EchsError as exc:  # their rows are gone: that node drops them when it next looks
            log.warning("cannot tell a node its threads were deleted", node=owner, error=exc.message)
    if top["parent"] is not None:
        try:
            await node.router.run(ForgetChild(thread_id=top["parent"], child_id=op.thread_id))
        except NotFound:
            pass
    return {"deleted": doomed}


@answers(Dispose)
async def dispose(node: LocalNode, op: Dispose) -> dict[str, Any]:
    await node.supervisor.dispose(list(op.thread_ids), op.root, op.keep_worktrees)
    return {}
