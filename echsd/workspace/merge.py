"""Merging a thread's branch into another work tree, through git, or not at all.

Before anything is touched, the merge is worked out without the work tree: a fast-forward
if the target's HEAD is an ancestor of the branch, else ``git merge-tree --write-tree``
(the merge computed in the object store alone), which names the conflicting files. Files
the merge would change that have uncommitted changes in the target are refused the same
way, but for ``carried`` ones: uncommitted changes that the branch itself started from (a
thread's worktree made from this very work tree, its work in progress included), still as
they were then and not staged. Those are in the branch already, so they are set aside
(written back as HEAD has them) for the merge, which then brings them back with the
branch's work; if the merge fails they are put back as they were. Only a merge known to be
clean runs in the target (``git merge --ff-only`` or ``git merge --no-ff``, with the user's
hooks); if git still fails there, ``merge --abort`` puts the target back. Either way a
refused merge leaves the target's tree, index and branch as they were.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from echsd.workspace.git import ECHSD_IDENTITY, GitFailed, MergeConflict, git
from echsd.workspace.repo import Repo, current_branch, head_commit, is_ancestor
from echsd.workspace.restore import restore
from echsd.workspace.snapshot import WHOLE_TREE, tree_of
from echsd.workspace.worktree import pending


@dataclass(frozen=True, slots=True)
class Merged:
    target: str  # the work tree merged into
    branch: str  # what was merged
    into: str | None  # the target's branch (None: a detached HEAD)
    commit: str  # the target's HEAD after the merge
    how: str  # fast-forward | merge | up-to-date

    def to_dict(self) -> dict[str, str | None]:
        return {"target": self.target, "branch": self.branch, "into": self.into, "commit": self.commit, "how": self.how}


async def merge_branch(target: Repo, branch: str, message: str, started_from: str | None = None) -> Merged:
    """Merge ``branch`` into the work tree ``target``; ``MergeConflict`` (nothing changed)
    when it would conflict or overwrite uncommitted changes. ``started_from``: the commit the
    branch was made from when that was this work tree's state (its uncommitted changes
    still as they were then are carried, not in the way)."""
    top = replace(target, cwd=target.top, prefix="")  # paths below are relative to the top
    into = await current_branch(top)
    ours = await head_commit(top)
    theirs = (await git(["rev-parse", "--verify", f"refs/heads/{branch}^{{commit}}"], cwd=top.cwd)).text
    if ours is not None and await is_ancestor(top, theirs, ours):
        return Merged(top.top, branch, into, ours, "up-to-date")
    changed = await _changed_by_merge(top, ours, theirs)
    dirty = sorted(set(await pending(top.top)) & set(changed))
    carried: list[str] = []
    now: str | None = None  # the work tree as it is, when something is carried
    if dirty and started_from is not None and ours is not None:
        now = await tree_of(top, WHOLE_TREE)
        carried, dirty = await _carried(top, started_from, now, dirty)
    if dirty:
        raise MergeConflict(
            f"merging {branch} into {top.top} would overwrite uncommitted changes to {_listed(dirty)}; "
            "commit or stash them, then merge again (nothing was changed)",
            dirty,
        )
    fast_forward = ours is None or await is_ancestor(top, ours, theirs)
    if not fast_forward:
        conflicts = await _merge_conflicts(top, ours, theirs)  # type: ignore[arg-type]
        if conflicts:
            raise MergeConflict(f"merging {branch} into {top.top} conflicts in {_listed(conflicts)} (nothing was changed)", conflicts)
    env = await _identity(top)
    args = ["merge", "--ff-only", branch] if fast_forward else ["merge", "--no-ff", "--no-edit", "-m", message, branch]
    if carried:
        await restore(top, "HEAD", carried)  # set aside: the branch brings them back
    try:
        await git([*args], cwd=top.top, env=env)
    except GitFailed:
        await git(["merge", "--abort"], cwd=top.top, ok=(0, 128))
        if carried and now is not None:
            await restore(top, now, carried)
        raise
    head = await head_commit(top)
    assert head is not None
    return Merged(top.top, branch, into, head, "fast-forward" if fast_forward else "merge")


async def _carried(top: Repo, started_from: str, now: str, dirty: list[str]) -> tuple[list[str], list[str]]:
    """``dirty`` split into the changes the branch started from (unstaged, and the same
    now as in ``started_from``) and those in the way."""
    staged = await git(["diff", "--cached", "--name-only", "-z", "--no-renames", "HEAD"], cwd=top.top)
    since = await git(["diff", "--name-only", "-z", "--no-renames", started_from, now], cwd=top.top)
    blocked = set(staged.fields()) | set(since.fields())
    return [path for path in dirty if path not in blocked], [path for path in dirty if path in blocked]


async def _changed_by_merge(target: Repo, ours: str | None, theirs: str) -> list[str]:
    """The top-relative paths the merge would change in the target."""
    base = ours if ours is not None else "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # git's empty tree
    if ours is not None and not await is_ancestor(target, ours, theirs):
        found = await git(["merge-base", ours, theirs], cwd=target.top, ok=(0, 1))
        base = found.text or base
    result = await git(["diff", "--name-only", "-z", "--no-renames", base, theirs], cwd=target.top)
    return result.fields()


async def _merge_conflicts(target: Repo, ours: str, theirs: str) -> list[str]:
    """The files a merge of ``theirs`` into ``ours`` would leave conflicted (git >= 2.38)."""
    result = await git(["merge-tree", "--write-tree", "--name-only", "--no-messages", ours, theirs], cwd=target.top, ok=(0, 1))
    if result.code == 0:
        return []
    return list(dict.fromkeys(result.lines()[1:]))  # the first line is the tree written


async def _identity(target: Repo) -> dict[str, str]:
    """A merge commit is the user's if git knows who they are, else echsd's."""
    known = await git(["var", "GIT_COMMITTER_IDENT"], cwd=target.top, ok=(0, 128))
    return {} if known.code == 0 else dict(ECHSD_IDENTITY)


def _listed(paths: list[str], shown: int = 20) -> str:
    text = ", ".join(paths[:shown])
    return text + (f" and {len(paths) - shown} more" if len(paths) > shown else "")
