"""A parent brings its sub-agents' work back itself, through ``echsd serve``: an agent type
with ``isolation = "worktree"`` in config.toml gives each of its agents a worktree made from
the parent's files as they are (uncommitted and untracked ones too), under ``worktree_root``; ``merge_agent`` merges
a finished agent's branch into the parent's files, carrying the uncommitted changes the
agent started from, and refuses (changing nothing) while uncommitted changes made since are
in the way; outside a git repository an agent asked for a worktree works in the parent's
cwd, with a note."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.cli.helpers import Serve, echs, json_lines
from tests.helpers import mock_directive
from tests.workspace.gitrepo import UserState, echs_ok, make_repo, run_git

CONFIG = """
[agent_types.builder]
description = "builds one feature on a branch of its own"
isolation = "worktree"
"""


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Serve]:
    state = tmp_path_factory.mktemp("merge_agent") / "state"
    state.mkdir()
    (state / "config.toml").write_text(f"worktree_root = {json.dumps(str(state.parent / 'trees'))}\n" + CONFIG)
    daemon = Serve(state)
    yield daemon
    try:
        daemon.terminate()
    finally:
        daemon.kill()


def shell(cmd: str) -> dict[str, Any]:
    return {"name": "exec_command", "arguments": {"cmd": cmd, "yield_time_ms": 20000}}


def tool_outputs(state: Path, thread_id: str, name: str) -> list[str]:
    events = json_lines(echs(state, "events", thread_id, "--json").stdout)
    return [e["data"]["output"] for e in events if e["event"] == "tool.completed" and e["data"]["name"] == name]


def send(state: Path, thread_id: str, steps: list[dict[str, Any]]) -> None:
    sent = echs(state, "send", thread_id, "go\n" + mock_directive(steps), "--wait", "--json")
    assert sent.returncode == 0, sent.stderr


def test_an_agent_type_in_a_worktree_and_merge_agent(serve: Serve, tmp_path: Path) -> None:
    state = serve.state_dir
    repo = make_repo(tmp_path / "proj", {"a.txt": "committed\n"})
    (repo / "a.txt").write_text("the parent's work in progress\n")
    (repo / "u.txt").write_text("untracked\n")
    parent = echs_ok(state, "new", "--cwd", str(repo))["thread_id"]
    task = "add feature.txt\n" + mock_directive(
        [{"calls": [shell("cat a.txt u.txt && printf 'feature\\n' > feature.txt")]}, {"text": "feature.txt added"}]
    )
    spawn = {"name": "spawn_agent", "arguments": {"message": task, "agent_type": "builder"}}
    send(state, parent, [{"calls": [spawn]}, {"calls": [{"name": "wait_agents", "arguments": {}}]}, {"text": "done"}])
    [spawned] = [json.loads(output) for output in tool_outputs(state, parent, "spawn_agent")]
    child, branch = spawned["agent_id"], spawned["branch"]
    assert branch == "echs/" + child.removeprefix("thr_")[:8] and "note" not in spawned
    assert Path(spawned["worktree"]).parent == state.parent / "trees"  # config.toml's worktree_root
    [seen] = tool_outputs(state, child, "exec_command")
    assert "the parent's work in progress" in seen and "untracked" in seen  # a child sees what its parent sees
    assert not (repo / "feature.txt").exists()
    [waited] = [json.loads(output) for output in tool_outputs(state, parent, "wait_agents")]
    assert waited["agents"][0]["branch"] == branch and waited["agents"][0]["diff_stat"]["files"] == 1

    (repo / "a.txt").write_text("changed again since\n")  # no longer what the child started from
    before = UserState.of(repo)
    merge = {"name": "merge_agent", "arguments": {"agent_id": child}}
    send(state, parent, [{"calls": [merge]}, {"text": "refused"}])
    [refused] = tool_outputs(state, parent, "merge_agent")
    assert "a.txt" in refused and "u.txt" not in refused and "uncommitted" in refused, refused
    assert UserState.of(repo) == before and not (repo / "feature.txt").exists()
    assert (repo / "a.txt").read_text() == "changed again since\n" and (repo / "u.txt").read_text() == "untracked\n"

    (repo / "a.txt").write_text("the parent's work in progress\n")  # as the child saw it: the branch has it
    send(state, parent, [{"calls": [merge]}, {"text": "merged"}])
    merged = json.loads(tool_outputs(state, parent, "merge_agent")[-1])
    assert merged["how"] == "fast-forward" and merged["into"] == "main" and merged["branch"] == branch, merged
    assert (repo / "feature.txt").read_text() == "feature\n"
    assert (repo / "a.txt").read_text() == "the parent's work in progress\n" and (repo / "u.txt").read_text() == "untracked\n"
    assert run_git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    assert run_git(repo, "rev-parse", "HEAD") == run_git(repo, "rev-parse", branch)
    assert UserState.of(repo).stash == before.stash
    echs_ok(state, "rm", parent)


def test_a_worktree_outside_git_falls_back_to_the_parents_cwd(serve: Serve, tmp_path: Path) -> None:
    state = serve.state_dir
    plain = tmp_path / "plain"
    plain.mkdir()
    parent = echs_ok(state, "new", "--cwd", str(plain))["thread_id"]
    task = "say hi\n" + mock_directive([{"text": "hi"}])
    spawn = {"name": "spawn_agent", "arguments": {"message": task, "isolation": "worktree"}}
    send(state, parent, [{"calls": [spawn]}, {"calls": [{"name": "wait_agents", "arguments": {}}]}, {"text": "done"}])
    [spawned] = [json.loads(output) for output in tool_outputs(state, parent, "spawn_agent")]
    assert "branch" not in spawned and "not in a git repository" in spawned["note"], spawned
    child = spawned["agent_id"]
    assert echs_ok(state, "show", child)["config"]["cwd"] == str(plain)
    send(state, parent, [{"calls": [{"name": "merge_agent", "arguments": {"agent_id": child}}]}, {"text": "nothing"}])
    [answer] = tool_outputs(state, parent, "merge_agent")
    assert "no worktree of its own" in answer, answer
    echs_ok(state, "rm", parent)


def test_a_parent_in_a_worktree_merges_its_agent_there_then_into_the_repository(serve: Serve, tmp_path: Path) -> None:
    """A parent with a worktree of its own: its agent starts from the parent's worktree as it
    is mid-turn; merge_agent commits the parent's work in progress there first and merges into
    its branch, never the user's; ``echs merge`` of the parent then brings both into the
    repository it was made from."""
    state = serve.state_dir
    repo = make_repo(tmp_path / "proj", {"README.md": "hello\n"})
    before = UserState.of(repo)
    made = echs_ok(state, "new", "--cwd", str(repo), "--worktree")
    parent, tree = made["thread_id"], Path(made["worktree"]["path"])
    task = "add c.txt\n" + mock_directive([{"calls": [shell("cat p.txt && printf 'child\\n' > c.txt")]}, {"text": "c.txt added"}])
    spawn = {"name": "spawn_agent", "arguments": {"message": task, "isolation": "worktree"}}
    steps = [{"calls": [shell("printf 'parent\\n' > p.txt")]}, {"calls": [spawn]}, {"calls": [{"name": "wait_agents", "arguments": {}}]}, {"text": "done"}]
    send(state, parent, steps)
    [spawned] = [json.loads(output) for output in tool_outputs(state, parent, "spawn_agent")]
    child = spawned["agent_id"]
    assert "parent" in tool_outputs(state, child, "exec_command")[0]  # the parent's file, uncommitted when it spawned
    merge = {"name": "merge_agent", "arguments": {"agent_id": child}}
    send(state, parent, [{"calls": [shell("printf 'more\\n' > q.txt")]}, {"calls": [merge]}, {"text": "merged"}])
    merged = json.loads(tool_outputs(state, parent, "merge_agent")[-1])
    assert merged["target"] == str(tree) and merged["into"] == made["worktree"]["branch"] and merged["how"] == "merge", merged
    assert sorted(p.name for p in tree.iterdir() if p.name != ".git") == ["README.md", "c.txt", "p.txt", "q.txt"]
    assert UserState.of(repo) == before and not (repo / "c.txt").exists()  # the user's work tree: untouched so far

    into_repo = echs_ok(state, "merge", parent)
    assert into_repo["target"] == str(repo) and into_repo["how"] == "fast-forward", into_repo
    assert (repo / "c.txt").read_text() == "child\n" and (repo / "p.txt").read_text() == "parent\n" and (repo / "q.txt").read_text() == "more\n"
    assert run_git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    echs_ok(state, "rm", parent)
