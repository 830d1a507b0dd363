"""A thread in a worktree of its own, under the daemon's (hidden) state directory, commits
from inside its sandbox: its worktree and the repository's git dirs (the worktree's gitdir
lives in the main repository's ``.git/worktrees/``) are writable, the rest of the state
directory stays hidden, and the hooks stay read-only."""

from __future__ import annotations

import subprocess
from pathlib import Path

from echsd.threads.workspaces import Workspaces
from tests.sandbox.helpers import Confined


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


async def test_a_worktree_thread_commits_from_inside_its_sandbox(confined: Confined, tmp_path: Path) -> None:
    repo = tmp_path / "proj"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "README").write_text("hi\n")
    git(repo, "add", "README")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first")
    workspaces = Workspaces(tmp_path / "state" / "worktrees")  # the fixture's daemon hides tmp_path/state
    prepared = await workspaces.prepare("thr_5a0dbe0000000001", str(repo))
    assert prepared.worktree is not None
    tree = Path(prepared.cwd)
    ran = await confined.run(
        confined.policy(tree),
        "echo change > made.txt && git add made.txt && git -c user.name=a -c user.email=a@a commit -qm 'from the sandbox' && echo committed; "
        f"cat {tmp_path / 'state' / 'token'}; echo 'touch pwned' > {repo / '.git' / 'hooks' / 'post-commit'}",
    )
    assert "committed" in ran.output, ran.report
    assert git(repo, "log", "-1", "--format=%s", prepared.worktree["branch"]).strip() == "from the sandbox"
    assert "secret" not in ran.output  # the rest of the state directory is still hidden
    assert not (repo / ".git" / "hooks" / "post-commit").exists()
    await workspaces.forget("thr_5a0dbe0000000001", {"worktree": prepared.worktree}, keep_worktree=False)
    assert not tree.exists()
