"""Real git repositories in temp dirs, and a look at the state echsd must leave alone."""

from __future__ import annotations

import hashlib
import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

IDENTITY = ["-c", "user.name=Test User", "-c", "user.email=test@example.com"]


def run_git(repo: Path, *args: str, check: bool = True) -> str:
    result = subprocess.run(["git", *IDENTITY, *args], cwd=repo, capture_output=True, text=True, timeout=60)
    if check and result.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {result.stderr}")
    return result.stdout


def make_repo(path: Path, files: dict[str, str] | None = None) -> Path:
    """A repository with one commit on ``main`` holding ``files``."""
    path.mkdir(parents=True, exist_ok=True)
    run_git(path, "init", "-q", "-b", "main")
    for name, text in (files or {"README.md": "hello\n"}).items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    run_git(path, "add", "-A")
    run_git(path, "commit", "-q", "-m", "initial")
    return path


@dataclass(frozen=True)
class UserState:
    """What the user's repository shows of their own work: branch, HEAD, index, stash."""

    branch: str
    head: str
    index: str  # the index file's bytes, hashed
    staged: str  # git ls-files --stage
    stash: str

    @classmethod
    def of(cls, repo: Path) -> "UserState":
        index = repo / ".git" / "index"
        return cls(
            branch=run_git(repo, "symbolic-ref", "--short", "HEAD").strip(),
            head=run_git(repo, "rev-parse", "HEAD").strip(),
            index=hashlib.sha256(index.read_bytes()).hexdigest() if index.exists() else "",
            staged=run_git(repo, "ls-files", "--stage"),
            stash=run_git(repo, "stash", "list"),
        )


def worktrees(repo: Path) -> list[str]:
    """``git worktree list --porcelain``'s paths, the main work tree first."""
    out = run_git(repo, "worktree", "list", "--porcelain")
    return [line.split(" ", 1)[1] for line in out.splitlines() if line.startswith("worktree ")]


def echsd_refs(repo: Path) -> list[str]:
    return run_git(repo, "for-each-ref", "--format=%(refname)", "refs/echsd/").split()


@dataclass(frozen=True)
class ProjectGit:
    """The worktrees, ``echs/`` branches and snapshot refs of the repository tests run in."""

    top: str
    worktrees: list[str]
    branches: list[str]
    snapshot_refs: list[str]


def project_git_state() -> ProjectGit | None:
    """None when the tests do not run inside a git repository (a tarball)."""
    top = Path(__file__).resolve().parents[2]
    if not (top / ".git").exists():
        return None
    return ProjectGit(
        str(top),
        worktrees(top),
        run_git(top, "for-each-ref", "--format=%(refname)", "refs/heads/echs/").split(),
        echsd_refs(top),
    )


def prune_new_snapshot_refs(before: ProjectGit) -> None:
    """Delete the ``refs/echsd/`` refs made since ``before`` (test threads' snapshots)."""
    now = project_git_state()
    if now is None:
        return
    new = sorted(set(now.snapshot_refs) - set(before.snapshot_refs))
    if new:
        subprocess.run(["git", "update-ref", "--stdin"], cwd=now.top, input="".join(f"delete {ref}\n" for ref in new), text=True, check=False)


def echs_ok(state: Path, *args: str) -> Any:
    """``echs ARGS --json`` that must succeed: its JSON."""
    from tests.cli.helpers import echs

    result = echs(state, *args, "--json")
    assert result.returncode == 0, (args, result.stderr)
    return json.loads(result.stdout)
