"""What a policy makes writable on a real filesystem: roots, git dirs, symlinks."""

from __future__ import annotations

import subprocess
from pathlib import Path

from echsd.tools.sandbox.layout import find_repository, layout
from echsd.tools.sandbox.policy import SandboxPolicy


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True, capture_output=True)


def policy(cwd: Path, mode: str = "workspace-write", **kwargs: object) -> SandboxPolicy:
    return SandboxPolicy(mode, network=False, cwd=str(cwd), **kwargs)  # type: ignore[arg-type]


def test_workspace_write_allows_cwd_tmpdir_and_roots_only(tmp_path: Path) -> None:
    cwd, tmp, extra, other = (tmp_path / name for name in ("cwd", "tmp", "extra", "other"))
    for directory in (cwd, tmp, extra, other):
        directory.mkdir()
    plan = layout(policy(cwd, tmpdir=str(tmp), writable_roots=(str(extra),)))
    assert plan.may_write(str(cwd / "a" / "b.txt"))
    assert plan.may_write(str(tmp / "x"))
    assert plan.may_write(str(extra / "x"))
    assert not plan.may_write(str(other / "x"))
    assert not plan.may_write(str(tmp_path / "cwd-sibling"))
    assert not plan.may_write("/etc/passwd")


def test_a_symlink_out_of_the_roots_is_judged_by_its_target(tmp_path: Path) -> None:
    cwd, other = tmp_path / "cwd", tmp_path / "other"
    cwd.mkdir()
    other.mkdir()
    (cwd / "link").symlink_to(other)
    plan = layout(policy(cwd))
    assert not plan.may_write(str(cwd / "link" / "file"))


def test_read_only_and_full_access(tmp_path: Path) -> None:
    assert not layout(policy(tmp_path, "read-only", tmpdir=str(tmp_path))).may_write(str(tmp_path / "x"))
    assert layout(policy(tmp_path, "full-access")).writable == ()


def test_the_cwds_repository_is_writable_but_not_its_hooks_or_config(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    git(repo, "init", "-q")
    plan = layout(policy(repo / "sub"))  # the git dir is above the cwd
    git_dir = str((repo / ".git").resolve())
    assert plan.repository is not None and plan.repository.git_dir == git_dir
    assert plan.may_write(str(repo / ".git" / "objects" / "ab" / "cd"))
    assert plan.may_write(str(repo / ".git" / "index"))
    assert not plan.may_write(str(repo / ".git" / "hooks" / "pre-commit"))
    assert not plan.may_write(str(repo / ".git" / "config"))
    assert not plan.may_write(str(repo / "README"))  # the repository's files above the cwd are not
    assert git_dir in plan.pinned


def test_a_worktree_writes_to_its_main_repositorys_common_dir(tmp_path: Path) -> None:
    main, tree = tmp_path / "main", tmp_path / "tree"
    main.mkdir()
    git(main, "init", "-q")
    git(main, "commit", "-q", "--allow-empty", "-m", "first")
    git(main, "worktree", "add", "-q", str(tree))
    found = find_repository(str(tree))
    assert found is not None
    assert found.common_dir == str((main / ".git").resolve())
    assert found.git_dir.startswith(found.common_dir + "/worktrees/")
    plan = layout(policy(tree))
    assert plan.may_write(str(main / ".git" / "refs" / "heads" / "x"))
    assert not plan.may_write(str(main / ".git" / "hooks" / "post-checkout"))
    assert not plan.may_write(str(tree / ".git"))  # the pointer to the git dir
    assert plan.may_write(str(tree / "file"))


def test_submodules_and_other_worktrees_keep_their_hooks_and_config(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    module = repo / ".git" / "modules" / "vendor" / "lib"  # a submodule named vendor/lib
    (module / "modules" / "inner").mkdir(parents=True)  # and one nested in it
    repo.mkdir(exist_ok=True)
    git(repo, "init", "-q")
    for git_dir in (module, module / "modules" / "inner"):
        (git_dir / "HEAD").write_text("ref: refs/heads/main\n")
        (git_dir / "config").write_text("[core]\n")
    (repo / ".git" / "worktrees" / "other").mkdir(parents=True)
    (repo / ".git" / "worktrees" / "other" / "config.worktree").write_text("[core]\n")
    plan = layout(policy(repo))
    for directory in (module, module / "modules" / "inner"):
        assert plan.may_write(str(directory / "objects" / "ab"))
        assert not plan.may_write(str(directory / "hooks" / "post-checkout"))
        assert not plan.may_write(str(directory / "config"))
    assert not plan.may_write(str(repo / ".git" / "worktrees" / "other" / "config.worktree"))
    assert plan.may_write(str(repo / ".git" / "worktrees" / "other" / "HEAD"))


def test_another_repository_at_a_writable_roots_top_stays_read_only(tmp_path: Path) -> None:
    cwd, other = tmp_path / "cwd", tmp_path / "other"
    cwd.mkdir()
    other.mkdir()
    git(other, "init", "-q")
    plan = layout(policy(cwd, writable_roots=(str(other),)))
    assert plan.may_write(str(other / "file"))
    assert not plan.may_write(str(other / ".git" / "HEAD"))


def test_hidden_paths_are_never_writable(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "echsd.sock").touch()
    plan = layout(policy(tmp_path, hidden=(str(state / "echsd.sock"), str(state))))
    assert plan.hidden == (str(state.resolve()),)  # what is beneath a hidden directory is hidden with it
    assert plan.may_write(str(tmp_path / "file"))
    assert not plan.may_write(str(state / "token"))


def test_a_worktree_under_a_hidden_state_dir_stays_visible_and_the_rest_hidden(tmp_path: Path) -> None:
    state = tmp_path / "state"
    tree = state / "worktrees" / "proj-1a2b3c4d"
    (tree / "sub").mkdir(parents=True)
    (state / "worktrees" / "other-thread").mkdir()
    (state / "token").write_text("secret")
    (state / "run").mkdir()
    plan = layout(policy(tree / "sub", hidden=(str(state),)))
    assert plan.hidden == tuple(str(p.resolve()) for p in (state / "run", state / "token", state / "worktrees" / "other-thread"))
    assert plan.may_write(str(tree / "sub" / "file"))
    assert not plan.may_write(str(state / "token"))
    whole = layout(policy(state, hidden=(str(state),)))
    assert whole.hidden == (str(state.resolve()),)  # a hidden cwd stays hidden
