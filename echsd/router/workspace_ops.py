"""Node handlers of the workspace ops: a turn's diff (read from the log) and fork.

``thread.fork`` runs on the node that runs the source thread: its worker hands over the
config and history up to the turn (``thread.fork_source``), the worktree (if asked) is made
from the snapshot taken when that turn ended, and the new thread is created here with that
history in the same unit as its ``thread.created``.
"""

from __future__ import annotations

from typing import Any

import trio

from echsd.errors import NotFound
from echsd.ids import new_thread_id
from echsd.ops.internal import ForkSource
from echsd.ops.threads import Get
from echsd.ops.workspace import Diff, Fork
from echsd.router.handlers import answers
from echsd.router.node import LocalNode
from echsd.store import Conn, queries
from echsd.workspace import snapshot
from echsd.workspace.git import GitMissing
from echsd.workspace.repo import find_repo

NO_STAT = {"files": 0, "insertions": 0, "deletions": 0}


@answers(Diff)
async def diff(node: LocalNode, op: Diff) -> dict[str, Any]:
    """The last ``turn.diff`` not undone since (of turn ``turn``, if given)."""
    await node.router.run(Get(thread_id=op.thread_id))  # not_found for an unknown thread
    thread_id, wanted = op.thread_id, op.turn
    found = await node.store.read(lambda conn: _find_diff(conn, thread_id, wanted))
    if found is None:
        if wanted is not None:
            raise NotFound(f"thread {thread_id} has no turn {wanted}")
        return {"thread_id": thread_id, "turn": None, "turn_id": None, "paths": [], "diff": "", "truncated": False, "stat": dict(NO_STAT)}
    return {"thread_id": thread_id, **found}


def _find_diff(conn: Conn, thread_id: str, wanted: int | None) -> dict[str, Any] | None:
    undone: set[str] = set()
    for event in queries.events_of_types(conn, thread_id, ("turn.diff", "thread.undone", "turn.started"), newest_first=True):
        data = event.data
        if event.type == "thread.undone":
            undone.update(data.get("turn_ids") or ())
            continue
        if data.get("turn_id") in undone:
            continue
        if wanted is not None and data.get("turn") != wanted:
            continue
        if event.type == "turn.diff":
            return {key: data.get(key) for key in ("turn", "turn_id", "paths", "diff", "truncated", "stat", "branch", "commit") if key in data}
        if wanted is not None:  # that turn exists (not undone) and changed nothing
            return {"turn": wanted, "turn_id": data.get("turn_id"), "paths": [], "diff": "", "truncated": False, "stat": dict(NO_STAT)}
    return None


@answers(Fork)
async def fork(node: LocalNode, op: Fork) -> dict[str, Any]:
    node.supervisor.record(op.thread_id)  # routed here: this node runs the source
    source = await node.router.run(ForkSource(thread_id=op.thread_id, at_turn=op.at_turn, turn_id=op.turn_id))
    config = {key: value for key, value in source["config"].items() if value is not None}
    node.supervisor.build_config(config)  # still valid (its cwd may be gone): refused before any git work
    thread_id = new_thread_id()
    extra: dict[str, Any] = {"forked_from": op.thread_id, "forked_at_turn": source["turn"], "compacted_turns": source["compacted_turns"]}
    if source.get("task"):
        extra["task"] = source["task"]
    workspaces = node.supervisor.workspaces
    prepared, note = None, None
    if op.worktree:
        base, note = await _fork_base(op.thread_id, source)
        prepared = await workspaces.prepare(thread_id, str(config["cwd"]), base_commit=base)
        note = prepared.note or note
        config["cwd"] = prepared.cwd
        if prepared.worktree is not None:
            extra["worktree"] = prepared.worktree
    turn_id = source.get("turn_id")
    through = await node.store.read(lambda conn: _turn_end_seq(conn, op.thread_id, turn_id)) if turn_id else 1
    if source.get("undone_turns"):
        extra["undone_turns"] = source["undone_turns"]
    try:
        created = await node.supervisor.create_root(
            node.supervisor.build_config(config), extra, thread_id, (source["items"], source["turn_ids"]), (op.thread_id, through)
        )
    except BaseException:
        if prepared is not None:
            with trio.CancelScope(shield=True):
                await workspaces.discard(thread_id, prepared.worktree)
        raise
    return {**created, "note": note} if note else created


def _turn_end_seq(conn: Conn, thread_id: str, turn_id: str) -> int:
    """The seq of the event that ended ``turn_id``: a fork's log is the source's up to it."""
    for event in queries.events_of_types(conn, thread_id, ("turn.completed", "turn.interrupted", "turn.error"), newest_first=True):
        if event.data.get("turn_id") == turn_id:
            return event.seq
    return 1


async def _fork_base(source_id: str, source: dict[str, Any]) -> tuple[str | None, str | None]:
    """The snapshot the source took when its chosen turn ended (None: the worktree starts
    from the cwd's current state, and a note says why)."""
    turn_id = source.get("turn_id")
    try:
        repo = await find_repo(str(source["config"]["cwd"]))
    except GitMissing:
        return None, None
    if repo is None or turn_id is None:
        return None, None
    found = await snapshot.has_ref(repo, snapshot.turn_ref(source_id, turn_id, "end"))
    if found is None:
        return None, f"turn {source['turn']} of {source_id} has no snapshot of its end: the worktree starts from the cwd's current state"
    return found, None
