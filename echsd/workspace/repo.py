"""Which repository a directory is in, as git itself finds it."""

from __future__ import annotations

import os
from dataclasses import dataclass

import trio

from echsd.errors import BadRequest
from echsd.workspace.git import GitFailed, NotARepository, git


@dataclass(frozen=True, slots=True)
class Repo:
    """A directory inside a git work tree: where the work tree is, and its git dirs."""

    cwd: str  # the directory asked about (a thread's cwd)
    top: str  # the work tree's top-level directory
    git_dir: str  # .git, or .git/worktrees/NAME for a linked worktree (its own index and HEAD)
    common_dir: str  # the repository shared by all its worktrees (objects, refs, config, hooks)
    prefix: str  # ``cwd`` relative to ``top`` ("" at the top, else ending in "/")

    @property
    def name(self) -> str:
        """The main work tree's directory name (a worktree is named after its repository)."""
        base = os.path.basename(self.common_dir.rstrip("/"))
        parent = os.path.dirname(self.common_dir.rstrip("/"))
        return os.path.basename(parent) if base == ".git" else base.removesuffix(".git") or "repo"

    @property
    def index(self) -> str:
        return os.path.join(self.git_dir, "index")


def _git_above(path: str) -> bool:
    """Whether a ``.git`` (a directory, or a worktree's file) is at ``path`` or above it: a
    few stat calls that spare starting git for a directory in no repository at all."""
    directory = os.path.abspath(path)
    while True:
        if os.path.lexists(os.path.join(directory, ".git")):
            return True
        parent = os.path.dirname(directory)
        if parent == directory:
            return False
        directory = parent


async def is_dir(path: str) -> bool:
    return await trio.to_thread.run_sync(os.path.isdir, path)


async def same_path(first: str, second: str) -> bool:
    """Whether two paths name the same place (symlinks followed), asked off the event loop."""
    return await trio.to_thread.run_sync(lambda: os.path.realpath(first) == os.path.realpath(second))


async def find_repo(cwd: str) -> Repo | None:
    """The repository ``cwd`` is in, or None outside any work tree (a bare repository's
    directory, or no repository at all). ``GitMissing`` without git."""
    if not await trio.to_thread.run_sync(_git_above, cwd):
        return None
    try:
        result = await git(
            ["rev-parse", "--path-format=absolute", "--show-toplevel", "--git-dir", "--git-common-dir", "--show-prefix"],
            cwd=cwd,
            ok=(0, 128),
        )
    except NotARepository:
        return None
    if result.code != 0:
        if "not a git repository" in result.err or "must be run in a work tree" in result.err:
            return None
        raise GitFailed(f"git cannot tell which repository {cwd} is in: {result.err.splitlines()[-1] if result.err else 'exit 128'}")
    lines = result.out.decode("utf-8", "surrogateescape").split("\n")
    if len(lines) < 3 or not lines[0]:
        return None  # inside a git dir, or a bare repository
    prefix = lines[3] if len(lines) > 3 else ""
    return Repo(cwd=cwd, top=lines[0], git_dir=lines[1], common_dir=lines[2], prefix=prefix)


async def require_repo(cwd: str) -> Repo:
    repo = await find_repo(cwd)
    if repo is None:
        raise NotARepository(f"{cwd} is not in a git repository")
    return repo


async def head_commit(repo: Repo) -> str | None:
    """The commit HEAD names, or None on an unborn branch (a repository with no commit)."""
    result = await git(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], cwd=repo.cwd, ok=(0, 1))
    return result.text or None


async def current_branch(repo: Repo) -> str | None:
    """The branch checked out (short name), or None for a detached HEAD."""
    result = await git(["symbolic-ref", "--quiet", "--short", "HEAD"], cwd=repo.cwd, ok=(0, 1))
    return result.text or None


async def resolve_commit(repo: Repo, ref: str) -> str:
    """The commit ``ref`` names (a branch, tag, sha, ``HEAD~2``...); ``BadRequest`` otherwise."""
    if ref.startswith("-"):
        raise BadRequest(f"base {ref!r} is not a git ref")
    result = await git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"], cwd=repo.cwd, ok=(0, 1))
    if not result.text:
        raise BadRequest(f"base {ref!r} names no commit in {repo.top}")
    return result.text


async def is_ancestor(repo: Repo, older: str, newer: str) -> bool:
    result = await git(["merge-base", "--is-ancestor", older, newer], cwd=repo.cwd, ok=(0, 1))
    return result.code == 0
