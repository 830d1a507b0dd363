"""Worktrees echsd makes for threads: add, commit a thread's work, remove (branch kept).

A thread's worktree is a ``git worktree`` on a branch of its own (``echs/<id prefix>``),
checked out from a base commit. Its work tree and index are echsd's: at the end of each
turn its changes are committed there (``commit_all``), with the user's hooks, as echsd.
Removing it (the thread was deleted) first commits whatever is left, so the branch holds
everything the thread did.
"""

from __future__ import annotations

import os

import trio

from echsd.workspace.git import ECHSD_IDENTITY, GitFailed, git
from echsd.workspace.repo import Repo

BRANCH_PREFIX = "echs/"


async def branch_exists(repo: Repo, branch: str) -> bool:
    result = await git(["rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"], cwd=repo.cwd, ok=(0, 1))
    return bool(result.text)


async def free_branch(repo: Repo, thread_id: str) -> str:
    """``echs/<prefix>``: the shortest prefix of the thread's hex id (8 digits at least)
    that names no branch yet."""
    digits = thread_id.removeprefix("thr_")
    for length in (8, 12, 16):
        branch = BRANCH_PREFIX + digits[:length]
        if not await branch_exists(repo, branch):
            return branch
    raise GitFailed(f"branch {BRANCH_PREFIX}{digits} exists already in {repo.top}")


async def add(repo: Repo, path: str, branch: str, base: str) -> None:
    """``git worktree add -b BRANCH PATH BASE`` (the parent directory is made first)."""
    await trio.to_thread.run_sync(lambda: os.makedirs(os.path.dirname(path), exist_ok=True))
    await git(["worktree", "add", "--quiet", "-b", branch, path, base], cwd=repo.cwd)


async def pending(worktree: str) -> list[str]:
    """Paths with uncommitted changes (untracked ones too) in a work tree, top-relative."""
    result = await git(
        ["status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames"], cwd=worktree, env={"GIT_OPTIONAL_LOCKS": "0"}
    )
    return [record[3:] for record in result.fields() if len(record) > 3]


async def commit_all(worktree: str, message: str) -> str | None:
    """Commit everything in the work tree (as echsd, with the user's hooks); the new
    commit, or None when there was nothing to commit."""
    if not await pending(worktree):
        return None
    await git(["add", "--all", "--", ":/"], cwd=worktree)
    await git(["commit", "--quiet", "--no-gpg-sign", "-m", message], cwd=worktree, env=ECHSD_IDENTITY)
    return (await git(["rev-parse", "HEAD"], cwd=worktree)).text


async def remove(repo_dir: str, path: str) -> None:
    """Remove the worktree (its branch stays); a directory already gone is only pruned."""
    if await trio.to_thread.run_sync(os.path.isdir, path):
        await git(["worktree", "remove", "--force", "--force", path], cwd=repo_dir)
    else:
        await git(["worktree", "prune"], cwd=repo_dir)


async def delete_branch(repo_dir: str, branch: str) -> None:
    """Delete a branch echsd made and nothing used (a thread that was not created)."""
    await git(["branch", "--quiet", "-D", branch], cwd=repo_dir, ok=(0, 1))
