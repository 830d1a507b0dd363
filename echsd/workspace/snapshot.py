"""Snapshots of a work tree: commits on private refs, made without touching the user's
branch, index or stash.

Like ``git stash create``, but with untracked files (ignored ones left out, as git leaves
them out of everything) and with nothing written to the user's index: the tree is built
in a temporary index file (``GIT_INDEX_FILE``), started from a copy of the work tree's own
index so that git rehashes only the files whose stat changed. The commit's parent is HEAD,
so ``git log refs/echsd/...`` reads naturally; the commit itself is reachable only from
echsd's refs (``refs/echsd/<thread>/...``), which go when the thread is deleted.

``scope`` limits what is recorded from the disk: a turn's snapshot records the thread's
cwd (what its diffs and undo look at); a worktree's base records the whole work tree. Paths
outside the scope keep what the index (or HEAD) says.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass

import trio

from echsd.workspace.git import ECHSD_IDENTITY, git
from echsd.workspace.repo import Repo, head_commit

WHOLE_TREE = ":/"  # a pathspec: the work tree's top, wherever the command runs
CWD = "."


@dataclass(frozen=True, slots=True)
class Snapshot:
    commit: str
    tree: str
    head: str | None  # the HEAD it was taken on (its parent)

    @property
    def dirty(self) -> bool:
        """Whether it differs from HEAD (a clean work tree's snapshot is HEAD's tree)."""
        return self.head is None or self.commit != self.head


def thread_refs(thread_id: str) -> str:
    """The prefix of every ref echsd keeps for a thread (pruned with it)."""
    return f"refs/echsd/{thread_id}/"


def turn_ref(thread_id: str, turn_id: str, which: str) -> str:
    """A turn's snapshot: ``which`` is ``start`` or ``end``."""
    return f"refs/echsd/{thread_id}/{turn_id}/{which}"


def base_ref(thread_id: str) -> str:
    """What a thread's worktree was made from (its parent's state then)."""
    return f"refs/echsd/{thread_id}/base"


async def tree_of(repo: Repo, scope: str = CWD) -> str:
    """The tree the work tree holds now (within ``scope``), written to the object store only."""
    with tempfile.TemporaryDirectory(prefix="echsd-index-") as scratch:
        index = os.path.join(scratch, "index")
        copied = await trio.to_thread.run_sync(_copy_index, repo.index, index)
        env = {"GIT_INDEX_FILE": index}
        if not copied and scope != WHOLE_TREE:
            head = await head_commit(repo)
            await git(["read-tree", head] if head else ["read-tree", "--empty"], cwd=repo.cwd, env=env)
        await git(["add", "--all", "--", scope], cwd=repo.cwd, env=env)
        return (await git(["write-tree"], cwd=repo.cwd, env=env)).text


async def take(repo: Repo, ref: str | None, message: str, scope: str = CWD) -> Snapshot:
    """Record the work tree (within ``scope``) as a commit on ``ref`` (None: no ref, the
    commit is kept by whatever refers to it next). A clean tree's snapshot is HEAD itself."""
    tree = await tree_of(repo, scope)
    found = await git(["rev-parse", "HEAD^{commit}", "HEAD^{tree}"], cwd=repo.cwd, ok=(0, 128))  # one call: HEAD and its tree
    head, head_tree = found.lines() if found.code == 0 and len(found.lines()) == 2 else (None, None)
    if head is not None and tree == head_tree:
        commit = head
    else:
        parents = ["-p", head] if head else []
        commit = (await git(["commit-tree", "--no-gpg-sign", *parents, "-m", message, tree], cwd=repo.cwd, env=ECHSD_IDENTITY)).text
    if ref is not None:
        await git(["update-ref", "-m", "echsd snapshot", ref, commit], cwd=repo.cwd)
    return Snapshot(commit, tree, head)


async def keep(repo: Repo, ref: str, commit: str) -> None:
    """Point ``ref`` at ``commit`` (a private ref keeps it from git's garbage collection)."""
    await git(["update-ref", "-m", "echsd", ref, commit], cwd=repo.cwd)


async def prune_refs(repo_dir: str, prefix: str) -> int:
    """Delete every ref under ``prefix`` (a thread's snapshots); returns how many went."""
    listed = await git(["for-each-ref", "--format=%(refname)", prefix], cwd=repo_dir)
    refs = listed.lines()
    if refs:
        commands = "".join(f"delete {ref}\n" for ref in refs)
        await git(["update-ref", "--stdin"], cwd=repo_dir, stdin=commands.encode())
    return len(refs)


async def has_ref(repo: Repo, ref: str) -> str | None:
    result = await git(["rev-parse", "--verify", "--quiet", ref], cwd=repo.cwd, ok=(0, 1))
    return result.text or None


def _copy_index(source: str, target: str) -> bool:
    """Copy the work tree's index (a consistent file: git replaces it by rename); False
    when there is none yet."""
    try:
        shutil.copyfile(source, target)
    except FileNotFoundError:
        return False
    return True
