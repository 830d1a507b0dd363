"""Turn diffs and undo through the real tool loop, on a real repository: a turn that patches
one file and creates another with a shell command gets a ``turn.diff`` naming both; undo
puts both back, leaves the user's branch, index and stash alone, takes the turns out of
the history, and leaves a file someone else changed since as it is (unless forced)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from echsd.errors import EchsError
from tests.helpers import Watch, check_thread_invariants, mock_directive
from tests.workspace.gitrepo import UserState, echsd_refs, make_repo, run_git

PATCH = "*** Begin Patch\n*** Update File: app.py\n@@\n-print('old')\n+print('new')\n*** End Patch\n"


def patch_call(patch: str = PATCH) -> dict[str, Any]:
    return {"name": "apply_patch", "arguments": {"input": patch}}


def exec_call(cmd: str) -> dict[str, Any]:
    return {"name": "exec_command", "arguments": {"cmd": cmd}}


async def turn(daemon: Any, tid: str, steps: list[dict[str, Any]]) -> Watch:
    async with Watch(daemon, tid) as watch:
        before = watch.last_seq
        await daemon.ops.send(tid, mock_directive(steps))
        await watch.wait_type("turn.completed", after_seq=before)
    return watch


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = make_repo(tmp_path / "proj", {"app.py": "print('old')\n", "notes.md": "notes\n"})
    (path / "notes.md").write_text("my uncommitted notes\n")  # the user's own work in progress
    run_git(path, "stash", "push", "-q", "-m", "an older stash of the user's")
    (path / "notes.md").write_text("my uncommitted notes\n")
    return path


async def test_a_turn_diff_names_both_files_and_undo_restores_them(daemon: Any, repo: Path) -> None:
    before = UserState.of(repo)
    tid = (await daemon.ops.create_thread(cwd=str(repo)))["thread_id"]
    watch = await turn(daemon, tid, [{"calls": [patch_call(), exec_call("echo x > new.txt")]}, {"text": "changed two files"}])
    [diff] = watch.of_type("turn.diff")
    assert sorted(diff.data["paths"]) == ["app.py", "new.txt"]
    assert diff.data["turn"] == 1 and diff.data["truncated"] is False
    assert "+print('new')" in diff.data["diff"] and "+x" in diff.data["diff"]
    assert diff.data["stat"] == {"files": 2, "insertions": 2, "deletions": 1}
    types = [e.type for e in watch.events]
    assert types.index("turn.diff") < types.index("turn.completed")
    assert (await daemon.ops.thread_diff(tid))["paths"] == diff.data["paths"]
    assert (await daemon.ops.thread_diff(tid, turn=1))["diff"] == diff.data["diff"]
    assert UserState.of(repo) == before  # snapshots touched nothing of the user's

    second = await turn(daemon, tid, [{"text": "just talking"}])
    assert not [e for e in second.of_type("turn.diff") if e.seq > diff.seq]  # no change, no diff
    assert (await daemon.ops.thread_diff(tid, turn=2))["paths"] == []

    undone = await daemon.ops.undo(tid, turns=2)
    assert undone["turns"] == [1, 2] and sorted(undone["restored"]) == ["app.py"] and undone["removed"] == ["new.txt"]
    assert (repo / "app.py").read_text() == "print('old')\n" and not (repo / "new.txt").exists()
    assert (repo / "notes.md").read_text() == "my uncommitted notes\n"
    assert UserState.of(repo) == before
    assert await daemon.ops.history(tid) == []
    async with Watch(daemon, tid) as watch:
        event = await watch.wait_type("thread.undone")
    assert event.data["turn_ids"] == [diff.data["turn_id"], second.of_type("turn.started")[-1].data["turn_id"]]
    assert (await daemon.ops.thread_diff(tid))["turn"] is None  # an undone turn's diff no longer counts
    third = await turn(daemon, tid, [{"text": "fresh start"}])
    assert third.of_type("turn.started")[-1].data["turn"] == 1  # the numbers are free again
    await check_thread_invariants(daemon, tid)
    await daemon.ops.delete_thread(tid)
    assert echsd_refs(repo) == []  # the snapshots went with the thread


async def test_undo_leaves_a_file_someone_else_changed_unless_forced(daemon: Any, repo: Path) -> None:
    tid = (await daemon.ops.create_thread(cwd=str(repo)))["thread_id"]
    await turn(daemon, tid, [{"calls": [patch_call(), exec_call("echo x > new.txt")]}, {"text": "done"}])
    (repo / "app.py").write_text("print('the user edited this since')\n")
    undone = await daemon.ops.undo(tid)
    assert undone["kept"] == ["app.py"] and undone["removed"] == ["new.txt"] and undone["restored"] == []
    assert (repo / "app.py").read_text() == "print('the user edited this since')\n"

    await turn(daemon, tid, [{"calls": [exec_call("echo y > other.txt")]}, {"text": "again"}])
    (repo / "other.txt").write_text("the user's now\n")
    forced = await daemon.ops.undo(tid, force=True)
    assert forced["removed"] == ["other.txt"] and forced["kept"] == [] and not (repo / "other.txt").exists()


async def test_undo_is_refused_while_a_turn_runs_and_works_outside_git(daemon: Any, repo: Path, tmp_path: Path) -> None:
    tid = (await daemon.ops.create_thread(cwd=str(repo)))["thread_id"]
    async with Watch(daemon, tid) as watch:
        await daemon.ops.send(tid, mock_directive({"text": "slow " * 20, "deltas": 20, "delay_ms": 100}))
        await watch.wait_type("turn.delta")
        with pytest.raises(EchsError) as refused:
            await daemon.ops.undo(tid)
        assert refused.value.code == "invalid_state" and "running a turn" in refused.value.message
        await watch.wait_type("turn.completed")
    plain = tmp_path / "plain"
    plain.mkdir()
    other = (await daemon.ops.create_thread(cwd=str(plain)))["thread_id"]
    watch = await turn(daemon, other, [{"calls": [exec_call("echo x > made.txt")]}, {"text": "ok"}])
    assert watch.of_type("turn.diff") == []  # not a repository: no diff
    undone = await daemon.ops.undo(other)
    assert "not in a git repository" in undone["note"] and (plain / "made.txt").exists()
    assert await daemon.ops.history(other) == []
    with pytest.raises(EchsError) as nothing:
        await daemon.ops.undo(other)
    assert nothing.value.code == "invalid_state"
