"""A thread's turns as git sees them: a snapshot at each turn's start and end, what the
turn changed (``turn.diff``), a worktree thread's commit, and undo.

The snapshots are commits on ``refs/echsd/<thread>/<turn>/start|end`` in the cwd's
repository (``echsd.workspace.snapshot``: the user's branch, index and stash untouched).
A turn's diff is ``start..end`` within the cwd, bounded in bytes. A thread with a worktree
of its own gets its turn's changes committed on its branch, so a finished child's work is
always there. Git trouble here never fails a turn: it is logged, and the turn has no diff.

Undo restores the paths the undone turns changed to what the first of them started from.
A path changed by someone else since (between the turns, or after the last) is left alone
and reported, unless forced.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from echsd.errors import EchsError
from echsd.logs import get_logger
from echsd.threads.workspacedecisions import UndoPlan
from echsd.threads.workspaces import Workspaces, commit_message
from echsd.workspace import diff, restore, snapshot, worktree
from echsd.workspace.repo import Repo, find_repo, same_path

log = get_logger(__name__)


@dataclass(frozen=True, slots=True)
class TurnMark:
    """Where a turn started: its repository and the snapshot then."""

    repo: Repo
    start: str


class TurnWork:
    def __init__(self, thread_id: str, workspaces: Workspaces) -> None:
        self.thread_id = thread_id
        self.workspaces = workspaces

    async def started(self, turn_id: str, cwd: str) -> TurnMark | None:
        """Snapshot the cwd's work tree as the turn starts (None: not a repository, or
        snapshots are off, or git failed: the turn then has no diff and cannot be undone)."""
        if not self.workspaces.snapshots:
            return None
        try:
            repo = await find_repo(cwd)
            if repo is None:
                return None
            shot = await snapshot.take(repo, snapshot.turn_ref(self.thread_id, turn_id, "start"), f"echsd: {self.thread_id} {turn_id} start")
        except EchsError as exc:
            log.warning("no snapshot of the turn's start", thread_id=self.thread_id, turn_id=turn_id, error=exc.message)
            return None
        return TurnMark(repo, shot.commit)

    async def ended(self, turn_id: str, number: int, mark: TurnMark, extra: dict[str, Any]) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """The turn's ``turn.diff`` data (None: it changed nothing in the cwd) and, for the
        one waiting on this thread, ``{branch, diff_stat}`` (None: nothing to say)."""
        repo = mark.repo
        try:
            end = await snapshot.take(repo, snapshot.turn_ref(self.thread_id, turn_id, "end"), f"echsd: {self.thread_id} {turn_id} end")
            found = await diff.changes(repo, mark.start, end.commit, self.workspaces.diff_bytes)
        except EchsError as exc:
            log.warning("no snapshot of the turn's end", thread_id=self.thread_id, turn_id=turn_id, error=exc.message)
            return None, None
        data = found.to_dict() if found is not None else None
        info = extra.get("worktree")
        if not isinstance(info, dict) or not await same_path(repo.top, info["path"]):
            return data, ({"branch": None, "diff_stat": data["stat"]} if data is not None else None)
        work: dict[str, Any] = {"branch": info["branch"]}
        try:
            commit = await worktree.commit_all(info["path"], commit_message(extra, self.thread_id, f"turn {number} ({turn_id})"))
            whole = Repo(cwd=info["path"], top=info["path"], git_dir=repo.git_dir, common_dir=repo.common_dir, prefix="")
            _paths, stat = await diff.changed_paths(whole, info["base"], "HEAD")
            work["diff_stat"] = stat.to_dict()
            if data is not None:
                data.update(branch=info["branch"], commit=commit)
        except EchsError as exc:  # a hook refused the commit, say: the changes stay in the worktree
            log.warning("cannot commit the turn's work on the thread's branch", thread_id=self.thread_id, error=exc.message)
            work["diff_stat"] = data["stat"] if data is not None else None
            work["commit_error"] = exc.message
            if data is not None:
                data.update(branch=info["branch"], commit_error=exc.message)
        return data, work

    async def undo(self, plan: UndoPlan, force: bool, extra: dict[str, Any]) -> dict[str, Any]:
        """Put back the files the planned turns changed; what was done, for ``thread.undone``."""
        files: dict[str, Any] = {"restored": [], "removed": [], "kept": []}
        repo = await find_repo(plan.cwd)
        if repo is None:
            return {**files, "note": f"{plan.cwd} is not in a git repository: only the history was undone, no file was touched"}
        starts = [await snapshot.has_ref(repo, snapshot.turn_ref(self.thread_id, t, "start")) for t in plan.turn_ids]
        ends = [await snapshot.has_ref(repo, snapshot.turn_ref(self.thread_id, t, "end")) for t in plan.turn_ids]
        if starts[0] is None:
            return {**files, "note": f"turn {plan.numbers[0]} has no snapshot of its start: only the history was undone, no file was touched"}
        now = await snapshot.tree_of(repo)
        changed: dict[str, None] = {}
        kept: set[str] = set()
        for index, start in enumerate(starts):
            if start is None:
                continue
            after = ends[index] or next((s for s in starts[index + 1 :] if s is not None), None) or now
            paths, _stat = await diff.changed_paths(repo, start, after)
            changed.update(dict.fromkeys(paths))
            following = starts[index + 1] if index + 1 < len(starts) else None
            if not force and ends[index] is not None and following is not None:  # changed by someone else between the turns
                kept.update((await diff.changed_paths(repo, ends[index], following))[0])
        if not force and ends[-1] is not None:  # ... or since the last of them
            kept.update((await diff.changed_paths(repo, ends[-1], now))[0])
        kept &= set(changed)
        todo = [path for path in changed if path not in kept]
        done = await restore.restore(repo, starts[0], todo)
        files = {"restored": done.restored, "removed": done.removed, "kept": sorted(kept)}
        info = extra.get("worktree")
        if isinstance(info, dict) and todo and await same_path(repo.top, info["path"]):
            shown = ", ".join(map(str, plan.numbers))
            try:
                files["commit"] = await worktree.commit_all(info["path"], commit_message(extra, self.thread_id, f"turn(s) {shown} undone", f"undo turn{'s' if len(plan.numbers) > 1 else ''} {shown}"))
            except EchsError as exc:
                files["commit_error"] = exc.message
        return files
