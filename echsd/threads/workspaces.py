"""What threads ask of git, daemon-wide: worktrees for threads, merges, and the cleanup
when threads are deleted (a turn's own snapshots are ``turnwork.py``'s).

A thread's worktree lives under ``worktree_root`` (default ``<state dir>/worktrees``) as
``<repository>-<id prefix>``, on a new branch ``echs/<id prefix>``, made from its base: a
ref the user named, or the state the cwd's work tree is in now, uncommitted and untracked
changes included (snapshotted first, so a child sees what its parent sees). Its cwd is the
same subdirectory of the worktree. Outside a git repository (or without git) there is no
worktree: the thread works in the directory itself, and the answer carries a note saying so.

Work that changes a repository's worktree list or a branch it merges into takes the
repository's lock, so parallel spawns and merges of one repository never race in git.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trio

from echsd.errors import EchsError, InvalidState
from echsd.logs import get_logger
from echsd.workspace import snapshot, worktree
from echsd.workspace.git import GitMissing
from echsd.workspace.merge import Merged, merge_branch
from echsd.workspace.repo import Repo, find_repo, is_dir, require_repo, resolve_commit, same_path

log = get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Prepared:
    """Where a new thread works: its cwd, its worktree (None: the shared directory), a note."""

    cwd: str
    worktree: dict[str, Any] | None  # {path, branch, origin, base, repo}
    note: str | None = None


class Workspaces:
    def __init__(self, root: Path, *, diff_bytes: int = 256 * 1024, snapshots: bool = True) -> None:
        self.root = Path(root)
        self.diff_bytes = diff_bytes
        self.snapshots = snapshots  # turn snapshots on (``[tuning] turn_snapshots``)
        self._locks: dict[str, trio.Lock] = {}

    def lock(self, common_dir: str) -> trio.Lock:
        """The lock of one repository (its worktree list, a merge into it)."""
        return self._locks.setdefault(common_dir, trio.Lock())

    # ---- worktrees ------------------------------------------------------------------------

    async def prepare(self, thread_id: str, cwd: str, *, base: str | None = None, base_commit: str | None = None) -> Prepared:
        """A worktree for thread ``thread_id`` (not created yet) from ``cwd``'s repository.

        ``base``: a ref; ``base_commit``: a commit (a fork's snapshot); neither: the work
        tree's current state. ``BadRequest`` for a base that names nothing."""
        try:
            repo = await find_repo(cwd)
        except GitMissing as exc:
            return Prepared(cwd, None, f"{exc.message}; the thread works in {cwd} itself")
        if repo is None:
            return Prepared(cwd, None, f"{cwd} is not in a git repository: the thread works in it directly, with no worktree of its own")
        async with self.lock(repo.common_dir):
            if base_commit is not None:
                start = base_commit
            elif base is not None:
                start = await resolve_commit(repo, base)
            else:  # what the cwd's work tree holds now, uncommitted changes too
                message = f"echsd: {repo.top} as {thread_id} found it, uncommitted changes included"
                start = (await snapshot.take(repo, None, message, scope=snapshot.WHOLE_TREE)).commit
            branch = await worktree.free_branch(repo, thread_id)
            path = await trio.to_thread.run_sync(self._free_path, f"{repo.name}-{branch.rsplit('/', 1)[-1]}")
            await worktree.add(repo, path, branch, start)
        await snapshot.keep(repo, snapshot.base_ref(thread_id), start)
        inner = os.path.join(path, repo.prefix) if repo.prefix else path
        await trio.to_thread.run_sync(lambda: os.makedirs(inner, exist_ok=True))
        info = {"path": path, "branch": branch, "origin": repo.top, "base": start, "repo": repo.common_dir}
        log.info("worktree made", thread_id=thread_id, path=path, branch=branch, base=start)
        return Prepared(inner.rstrip("/") or "/", info)

    def _free_path(self, name: str) -> str:
        self.root.mkdir(parents=True, exist_ok=True)
        candidate, number = self.root / name, 1
        while candidate.exists():
            number += 1
            candidate = self.root / f"{name}-{number}"
        return str(candidate)

    async def discard(self, thread_id: str, info: dict[str, Any] | None) -> None:
        """A worktree made for a thread that was then not created (its branch goes too)."""
        if info is None:
            return
        try:
            async with self.lock(info["repo"]):
                await worktree.remove(info["repo"], info["path"])
                await worktree.delete_branch(info["repo"], info["branch"])
            await snapshot.prune_refs(info["repo"], snapshot.thread_refs(thread_id))
        except EchsError as exc:
            log.warning("cannot remove an unused worktree", thread_id=thread_id, path=info.get("path"), error=exc.message)

    async def forget(self, thread_id: str, extra: dict[str, Any], keep_worktree: bool) -> None:
        """A thread was deleted: its worktree goes (what it left uncommitted is committed on
        its branch first; the branch stays) unless ``keep_worktree``, and its snapshot refs
        go. Failures are logged: the thread is gone either way."""
        info = extra.get("worktree") if isinstance(extra.get("worktree"), dict) else None
        repos = list(dict.fromkeys([*(extra.get("snapshot_repos") or []), *([info["repo"]] if info else [])]))
        if info is not None and not keep_worktree:
            try:
                if await is_dir(info["path"]):
                    await worktree.commit_all(info["path"], commit_message(extra, thread_id, "what was left uncommitted when the thread was deleted"))
                async with self.lock(info["repo"]):
                    await worktree.remove(info["repo"], info["path"])
            except EchsError as exc:
                log.warning("cannot remove a deleted thread's worktree", thread_id=thread_id, path=info["path"], error=exc.message)
        for repo_dir in repos:
            try:
                if await is_dir(repo_dir):
                    await snapshot.prune_refs(repo_dir, snapshot.thread_refs(thread_id))
            except EchsError as exc:
                log.warning("cannot prune a deleted thread's snapshots", thread_id=thread_id, repo=repo_dir, error=exc.message)

    # ---- merging a thread's branch --------------------------------------------------------

    async def merge(self, thread_id: str, extra: dict[str, Any], target_cwd: str, target_worktree: str | None) -> Merged:
        """Merge the thread's branch into the work tree of ``target_cwd`` (its parent's,
        or its origin). ``target_worktree``: the target is a thread's own worktree, whose
        pending work is committed first (echsd's work tree: nothing of the user's)."""
        info = extra.get("worktree")
        if not isinstance(info, dict):
            raise InvalidState(f"thread {thread_id} has no worktree of its own: its changes are in its cwd already, nothing to merge")
        if await is_dir(info["path"]):
            await worktree.commit_all(info["path"], commit_message(extra, thread_id, "uncommitted work, before a merge"))
        target: Repo = await require_repo(target_cwd)
        if not await same_path(target.common_dir, info["repo"]):
            raise InvalidState(f"{target_cwd} is in another repository than {info['branch']} ({info['repo']})")
        async with self.lock(info["repo"]):
            if target_worktree is not None and await same_path(target.top, target_worktree):
                await worktree.commit_all(target.top, f"echs: work in progress, before merging {info['branch']}")
            task = str(extra.get("task") or "")
            message = f"Merge {info['branch']} (echsd thread {thread_id})" + (f": {task}" if task else "")
            made_here = info.get("origin") and await same_path(target.top, str(info["origin"]))
            return await merge_branch(target, info["branch"], message, started_from=info.get("base") if made_here else None)


def commit_message(extra: dict[str, Any], thread_id: str, what: str, headline: str | None = None) -> str:
    """An echsd commit's message: the thread's task (or ``headline``) first, then what the
    commit holds and whose it is."""
    task = str(extra.get("task") or "").strip() or "(no task yet)"
    body = f"Task: {task}\n" if headline else ""
    return f"echs: {headline or task}\n\n{body}Thread {thread_id}: {what}.\nCommitted by echsd."
