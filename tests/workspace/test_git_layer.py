"""The git layer on real repositories: snapshots (untracked in, ignored out, the user's
index untouched), diffs bounded in bytes, restores, worktrees and merges that either
succeed or change nothing, and clear errors without git or outside a repository."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from echsd.workspace import diff, merge, restore, snapshot, worktree
from echsd.workspace.git import GitFailed, GitMissing, MergeConflict, NotARepository, git
from echsd.workspace.repo import find_repo, require_repo
from tests.workspace.gitrepo import UserState, make_repo, run_git, worktrees


async def test_outside_a_repository_and_without_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert await find_repo(str(plain)) is None
    with pytest.raises(NotARepository, match="not in a git repository"):
        await require_repo(str(plain))
    repo_dir = make_repo(tmp_path / "repo")
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    assert await find_repo(str(plain)) is None  # no .git anywhere above: git is not even asked
    with pytest.raises(GitMissing, match="git is not installed"):
        await find_repo(str(repo_dir))


async def test_find_repo_from_a_subdirectory(tmp_path: Path) -> None:
    repo_dir = make_repo(tmp_path / "proj", {"src/a.py": "x = 1\n"})
    repo = await require_repo(str(repo_dir / "src"))
    assert repo.top == str(repo_dir) and repo.prefix == "src/" and repo.name == "proj"
    assert repo.git_dir == repo.common_dir == str(repo_dir / ".git")


async def test_a_snapshot_records_untracked_not_ignored_and_leaves_the_user_alone(tmp_path: Path) -> None:
    repo_dir = make_repo(tmp_path / "r", {"a.txt": "one\n", ".gitignore": "*.log\n"})
    (repo_dir / "a.txt").write_text("two\n")
    (repo_dir / "staged.txt").write_text("staged\n")
    run_git(repo_dir, "add", "staged.txt")
    run_git(repo_dir, "stash", "list")
    (repo_dir / "new.txt").write_text("untracked\n")
    (repo_dir / "debug.log").write_text("ignored\n")
    before = UserState.of(repo_dir)
    repo = await require_repo(str(repo_dir))
    shot = await snapshot.take(repo, snapshot.turn_ref("thr_1", "turn_1", "start"), "test snapshot")
    assert shot.dirty
    listed = run_git(repo_dir, "ls-tree", "-r", "--name-only", "refs/echsd/thr_1/turn_1/start").split()
    assert sorted(listed) == [".gitignore", "a.txt", "new.txt", "staged.txt"]
    assert run_git(repo_dir, "show", "refs/echsd/thr_1/turn_1/start:a.txt") == "two\n"
    assert UserState.of(repo_dir) == before
    assert run_git(repo_dir, "status", "--porcelain") == " M a.txt\nA  staged.txt\n?? new.txt\n"
    clean = make_repo(tmp_path / "clean")
    clean_shot = await snapshot.take(await require_repo(str(clean)), None, "x")
    assert not clean_shot.dirty and clean_shot.commit == run_git(clean, "rev-parse", "HEAD").strip()
    assert await snapshot.prune_refs(str(repo_dir), snapshot.thread_refs("thr_1")) == 1
    assert run_git(repo_dir, "for-each-ref", "refs/echsd/") == ""


async def test_changes_between_snapshots_are_bounded_and_restorable(tmp_path: Path) -> None:
    repo_dir = make_repo(tmp_path / "r", {"keep.txt": "keep\n", "sub/edit.txt": "old\n", "other/x.txt": "x\n"})
    repo = await require_repo(str(repo_dir / "sub"))
    before = UserState.of(repo_dir)
    start = await snapshot.take(repo, None, "start")
    (repo_dir / "sub" / "edit.txt").write_text("new\n" * 10_000)
    (repo_dir / "sub" / "deep" / "dir").mkdir(parents=True)
    (repo_dir / "sub" / "deep" / "dir" / "made.txt").write_text("made\n")
    (repo_dir / "other" / "x.txt").write_text("outside the cwd\n")
    end = await snapshot.take(repo, None, "end")
    found = await diff.changes(repo, start.commit, end.commit, limit=2000)
    assert found is not None
    assert found.paths == ["deep/dir/made.txt", "edit.txt"]  # relative to the cwd, nothing outside it
    assert found.stat.to_dict() == {"files": 2, "insertions": 10_001, "deletions": 1}
    assert found.truncated and len(found.diff.encode()) < 2300 and "the diff is cut here" in found.diff
    small = await diff.changes(repo, start.commit, end.commit, limit=1_000_000)
    assert small is not None and not small.truncated and "+made" in small.diff
    done = await restore.restore(repo, start.commit, found.paths)
    assert done.restored == ["edit.txt"] and done.removed == ["deep/dir/made.txt"]
    assert (repo_dir / "sub" / "edit.txt").read_text() == "old\n"
    assert not (repo_dir / "sub" / "deep").exists()
    assert (repo_dir / "other" / "x.txt").read_text() == "outside the cwd\n"
    assert UserState.of(repo_dir) == before
    assert await diff.changes(repo, start.commit, start.commit, limit=100) is None


async def test_a_worktree_commits_and_merges_or_refuses_changing_nothing(tmp_path: Path) -> None:
    repo_dir = make_repo(tmp_path / "r", {"shared.txt": "base\n"})
    repo = await require_repo(str(repo_dir))
    branches = []
    for name in ("one", "two"):
        path = str(tmp_path / "wts" / name)
        branch = await worktree.free_branch(repo, f"thr_{name:0<16}")
        await worktree.add(repo, path, branch, "HEAD")
        Path(path, "shared.txt").write_text(f"{name}\n")
        assert await worktree.commit_all(path, f"echs: {name}") is not None
        assert await worktree.commit_all(path, "nothing") is None
        branches.append((path, branch))
    assert worktrees(repo_dir)[1:] == [path for path, _ in branches]
    before = UserState.of(repo_dir)
    merged = await merge.merge_branch(repo, branches[0][1], "merge one")
    assert merged.how == "fast-forward" and (repo_dir / "shared.txt").read_text() == "one\n"
    after_first = UserState.of(repo_dir)
    assert after_first.head != before.head and after_first.stash == before.stash
    with pytest.raises(MergeConflict) as conflict:
        await merge.merge_branch(repo, branches[1][1], "merge two")
    assert conflict.value.files == ["shared.txt"] and "conflicts in shared.txt" in conflict.value.message
    assert UserState.of(repo_dir) == after_first and run_git(repo_dir, "status", "--porcelain") == ""
    (repo_dir / "shared.txt").write_text("my own edit\n")
    third = str(tmp_path / "wts" / "three")
    await worktree.add(repo, third, "echs/three", "HEAD")
    Path(third, "shared.txt").write_text("three\n")
    await worktree.commit_all(third, "three")
    with pytest.raises(MergeConflict, match="uncommitted changes to shared.txt"):
        await merge.merge_branch(repo, "echs/three", "merge three")
    assert (repo_dir / "shared.txt").read_text() == "my own edit\n"
    for path, _ in branches:
        await worktree.remove(str(repo_dir), path)
    await worktree.remove(str(repo_dir), third)
    assert worktrees(repo_dir) == [str(repo_dir)]
    assert "echs/" in run_git(repo_dir, "branch", "--list", "echs/*")  # branches kept


async def test_a_merge_carries_the_changes_its_branch_started_from_or_puts_them_back(tmp_path: Path) -> None:
    """A branch made from a snapshot of the work tree's uncommitted changes merges into that
    work tree while those changes are still as they were (unstaged): they are set aside and
    come back with the branch. A merge git then refuses (a hook) leaves them as they were."""
    repo_dir = make_repo(tmp_path / "r", {"wip.txt": "committed\n", "other.txt": "x\n", "gone.txt": "g\n"})
    repo = await require_repo(str(repo_dir))
    (repo_dir / "wip.txt").write_text("in progress\n")
    (repo_dir / "new.txt").write_text("untracked\n")
    (repo_dir / "gone.txt").unlink()
    started = (await snapshot.take(repo, None, "as found", scope=snapshot.WHOLE_TREE)).commit
    path = str(tmp_path / "wts" / "child")
    await worktree.add(repo, path, "echs/child", started)
    Path(path, "feature.txt").write_text("feature\n")
    await worktree.commit_all(path, "feature")
    (repo_dir / "other.txt").write_text("y\n")
    run_git(repo_dir, "commit", "-q", "-m", "the user goes on", "--", "other.txt")  # the merge is not a fast-forward
    before = UserState.of(repo_dir)
    status = run_git(repo_dir, "status", "--porcelain", "--untracked-files=all")
    hook = repo_dir / ".git" / "hooks" / "pre-merge-commit"
    hook.write_text("#!/bin/sh\necho refused by the hook >&2\nexit 1\n")
    hook.chmod(0o755)
    with pytest.raises(GitFailed):
        await merge.merge_branch(repo, "echs/child", "merge child", started_from=started)
    after = UserState.of(repo_dir)  # the index file's stat cache is git's to refresh: its entries are compared
    assert replace(after, index="") == replace(before, index="") and run_git(repo_dir, "status", "--porcelain", "--untracked-files=all") == status
    assert (repo_dir / "wip.txt").read_text() == "in progress\n" and (repo_dir / "new.txt").read_text() == "untracked\n"
    assert not (repo_dir / "gone.txt").exists() and not (repo_dir / "feature.txt").exists()
    with pytest.raises(MergeConflict, match="uncommitted changes to gone.txt, new.txt, wip.txt"):
        await merge.merge_branch(repo, "echs/child", "merge child")  # without started_from: in the way
    hook.unlink()
    (repo_dir / "wip.txt").write_text("changed since\n")
    with pytest.raises(MergeConflict, match="uncommitted changes to wip.txt;"):
        await merge.merge_branch(repo, "echs/child", "merge child", started_from=started)
    (repo_dir / "wip.txt").write_text("in progress\n")
    merged = await merge.merge_branch(repo, "echs/child", "merge child", started_from=started)
    assert merged.how == "merge"
    assert (repo_dir / "feature.txt").read_text() == "feature\n" and (repo_dir / "wip.txt").read_text() == "in progress\n"
    assert (repo_dir / "new.txt").read_text() == "untracked\n" and not (repo_dir / "gone.txt").exists()
    assert run_git(repo_dir, "status", "--porcelain", "--untracked-files=all") == ""
    await worktree.remove(str(repo_dir), path)


async def test_git_output_is_cut_at_its_limit(tmp_path: Path) -> None:
    repo_dir = make_repo(tmp_path / "r", {f"f{i}.txt": "x\n" for i in range(300)})
    result = await git(["ls-files"], cwd=str(repo_dir), limit=100)
    assert result.truncated and len(result.out) == 100
