"""The workspace operations of the wire: a turn's diff, undo, fork and merge (CONTRACT.md 0b).

Handlers: ``thread.undo`` and ``thread.merge`` run in the thread's worker (its files and
history must not change under a turn); ``thread.fork`` is a node handler on the node that
runs the source thread (it reads the source through its worker, then creates the fork);
``thread.diff`` reads the log wherever the client is connected.
"""

from __future__ import annotations

import echsd.ops.examples as ex
from echsd.errors import BadRequest
from echsd.ops.base import Op, Where, op, param
from echsd.ops.threads import THE_THREAD
from echsd.wire.params import BOOL, COUNT, NAME, SEQ, THREAD_ID

STAT = "`stat` `{files, insertions, deletions}`"
DIFF_RESULT = {
    "thread_id": ex.TID,
    "turn": 2,
    "turn_id": "turn_5f0c2a9d11e24b7a",
    "paths": ["new.txt", "src/app.py"],
    "diff": "diff --git a/new.txt b/new.txt\nnew file mode 100644\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+x\n",
    "truncated": False,
    "stat": {"files": 2, "insertions": 3, "deletions": 1},
}


@op(
    "thread.diff",
    Where.HERE,
    result=f"`{{thread_id, turn, turn_id, paths, diff, truncated, {STAT[1:-1]}}}`; `paths` empty and `diff` \"\" when the turn changed no file",
    method="thread_diff",
    positional=("thread_id",),
    example={"thread_id": ex.TID, "turn": 2},
    example_result=DIFF_RESULT,
    notes="Read from the thread's `turn.diff` events (a turn that was undone no longer counts). Turns are numbered "
    "from 1 (`turn` of `turn.started`); after an undo the next turn takes the first free number again.",
)
class Diff(Op):
    """What a turn changed in the thread's cwd: the last turn that changed files, or turn `turn`."""

    thread_id: str = param(THREAD_ID, THE_THREAD, required=True)
    turn: int | None = param(COUNT, "the turn's number; default: the last turn that changed files")


@op(
    "thread.undo",
    Where.OWNER,
    result="`{thread_id, turns, turn_ids, restored, removed, kept, items_removed, note?}`",
    method="undo",
    positional=("thread_id",),
    example={"thread_id": ex.TID, "turns": 1},
    example_result={
        "thread_id": ex.TID,
        "turns": [2],
        "turn_ids": ["turn_5f0c2a9d11e24b7a"],
        "restored": ["src/app.py"],
        "removed": ["new.txt"],
        "kept": [],
        "items_removed": 6,
    },
    background=True,
    timeout_s=300.0,
    notes="Refused (`invalid_state`) while a turn runs. The files the turns changed in the thread's cwd are put back as "
    "they were when the first of them started (`restored`; `removed`: files they created); a file changed by "
    "someone else since is listed in `kept` and left alone, unless `force`. The turns leave the history, and "
    "`thread.undone` is logged. The user's branch, index and stash are never touched (a worktree thread's "
    "branch gets a commit of the undo). Outside a git repository only the history is undone (`note` says so).",
)
class Undo(Op):
    """Takes back the thread's last turns: their files as they were, their history left out."""

    thread_id: str = param(THREAD_ID, THE_THREAD, required=True)
    turns: int | None = param(COUNT, "how many of the last turns (default 1)")
    turn_id: str | None = param(NAME, "instead of `turns`: this turn and every later one")
    force: bool | None = param(BOOL, "also overwrite files changed by someone else since (default false)")

    def __post_init__(self) -> None:
        Op.__post_init__(self)
        if self.turns is not None and self.turn_id is not None:
            raise BadRequest("give turns or turn_id, not both")


@op(
    "thread.fork",
    Where.OWNER,
    result=ex.THREAD_OBJECT + " of the new thread (with `forked_from`, and `note` when a worktree could not be made)",
    method="fork_thread",
    positional=("thread_id",),
    example={"thread_id": ex.TID, "at_turn": 1, "worktree": True},
    example_result={**ex.THREAD, "thread_id": ex.CHILD, "forked_from": ex.TID, "forked_at_turn": 1},
    background=True,
    timeout_s=300.0,
    notes="The new thread has the same config and the history up to the end of that turn (a turn still running "
    "cannot be forked at; without `at_turn`, every finished turn); it runs on its own from then on. With "
    "`worktree`, it works in a new worktree made from the snapshot taken when that turn ended.",
)
class Fork(Op):
    """Creates a new thread with this one's config and history up to a turn."""

    thread_id: str = param(THREAD_ID, THE_THREAD, required=True)
    at_turn: int | None = param(SEQ, "the last turn to keep (its number; 0: none, an empty history); default: the last finished turn")
    turn_id: str | None = param(NAME, "instead of `at_turn`: the last turn to keep, by its id")
    worktree: bool | None = param(BOOL, "work in a new git worktree made from that turn's snapshot (default false)")

    def __post_init__(self) -> None:
        Op.__post_init__(self)
        if self.at_turn is not None and self.turn_id is not None:
            raise BadRequest("give at_turn or turn_id, not both")


@op(
    "thread.merge",
    Where.OWNER,
    result="`{thread_id, branch, target, into, commit, how}`; `how`: `fast-forward | merge | up-to-date`",
    method="merge_thread",
    positional=("thread_id",),
    example={"thread_id": ex.CHILD},
    example_result={"thread_id": ex.CHILD, "branch": "echs/11111111", "target": "/home/me/project", "into": "main", "commit": "4e1f0c2", "how": "merge"},
    background=True,
    timeout_s=300.0,
    notes="The thread must have a worktree and no running turn; whatever its worktree holds uncommitted is "
    "committed on its branch first. The target is its parent's cwd (committed first when the parent has a "
    "worktree of its own), or for a thread without a parent the work tree it was made from. Uncommitted "
    "changes there that the thread's worktree was made with, still unchanged and unstaged, come back with its "
    "branch (which holds them). A merge that would conflict, or overwrite other uncommitted changes, is refused "
    "with `conflict` naming the files, and changes nothing.",
)
class Merge(Op):
    """Merges a finished thread's branch into its parent's worktree or current branch."""

    thread_id: str = param(THREAD_ID, THE_THREAD, required=True)
