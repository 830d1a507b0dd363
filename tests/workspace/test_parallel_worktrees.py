"""Parallel agents on one repository, through ``echsd serve`` and ``echs``: a parent spawns
three children with ``isolation: "worktree"``; each edits the same file its own way and
commits nothing; the parent's tree stays as it was; each child's ``subagent.completed`` and
``wait_agents`` result name its branch and diff stat; ``echs merge`` of the first
fast-forwards, of the second reports the conflict naming the file and changes nothing;
deleting the parent removes the worktrees and keeps the branches."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.cli.helpers import Serve, echs, json_lines
from tests.helpers import mock_directive
from tests.workspace.gitrepo import UserState, echs_ok, make_repo, run_git, worktrees


def child_task(name: str) -> str:
    edit = {"name": "exec_command", "arguments": {"cmd": f"printf 'line from {name}\\n' > shared.txt && echo wrote"}}
    return f"rewrite shared.txt as {name}\n" + mock_directive([{"calls": [edit]}, {"text": f"{name} rewrote shared.txt"}])


def spawn(name: str) -> dict[str, Any]:
    return {"name": "spawn_agent", "arguments": {"message": child_task(name), "isolation": "worktree"}}


def test_three_children_in_worktrees_then_merge_and_conflict(serve: Serve, tmp_path: Path) -> None:
    state = serve.state_dir
    repo = make_repo(tmp_path / "proj", {"shared.txt": "base\n", "src/other.py": "x = 1\n"})
    before = UserState.of(repo)
    parent = echs_ok(state, "new", "--cwd", str(repo))["thread_id"]
    steps = [{"calls": [spawn("alpha"), spawn("beta"), spawn("gamma")]}, {"calls": [{"name": "wait_agents", "arguments": {}}]}, {"text": "all three are done"}]
    sent = echs(state, "send", parent, "fan out\n" + mock_directive(steps), "--wait", "--json")
    assert sent.returncode == 0, sent.stderr

    assert (repo / "shared.txt").read_text() == "base\n"  # the parent's tree is untouched
    assert run_git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    assert UserState.of(repo) == before

    events = json_lines(echs(state, "events", parent, "--json").stdout)
    spawned = [json.loads(e["data"]["output"]) for e in events if e["event"] == "tool.completed" and e["data"]["name"] == "spawn_agent"]
    children = [answer["agent_id"] for answer in spawned]
    assert len(children) == 3 and all(answer["branch"].startswith("echs/") for answer in spawned)
    completed = {e["data"]["agent_id"]: e["data"] for e in events if e["event"] == "subagent.completed"}
    assert set(completed) == set(children)
    for answer in spawned:
        done = completed[answer["agent_id"]]
        assert done["status"] == "completed" and done["branch"] == answer["branch"]
        assert done["diff_stat"] == {"files": 1, "insertions": 1, "deletions": 1}
        shown = echs_ok(state, "show", answer["agent_id"])
        assert shown["worktree"] == {"path": answer["worktree"], "branch": answer["branch"]}
        assert shown["config"]["cwd"] == answer["worktree"]
        branch_file = run_git(repo, "show", f"{answer['branch']}:shared.txt")
        assert branch_file.startswith("line from ")  # committed on its branch by echsd
        assert "echs: rewrite shared.txt as" in run_git(repo, "log", "-1", "--format=%B", answer["branch"])
    [waited] = [json.loads(e["data"]["output"]) for e in events if e["event"] == "tool.completed" and e["data"]["name"] == "wait_agents"]
    assert {agent["agent_id"]: agent["branch"] for agent in waited["agents"]} == {a["agent_id"]: a["branch"] for a in spawned}
    assert all(agent["diff_stat"]["files"] == 1 for agent in waited["agents"])
    plain = echs(state, "show", children[0])
    assert spawned[0]["branch"] in plain.stdout and "worktree" in plain.stdout

    first, second = children[0], children[1]
    merged = echs_ok(state, "merge", first)
    assert merged["how"] == "fast-forward" and merged["into"] == "main"
    after_first = UserState.of(repo)
    assert (repo / "shared.txt").read_text() == run_git(repo, "show", f"{spawned[0]['branch']}:shared.txt")
    refused = echs(state, "merge", second)
    assert refused.returncode == 1 and "conflict" in refused.stderr and "shared.txt" in refused.stderr
    assert UserState.of(repo) == after_first  # branch, index and stash as they were
    assert run_git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    assert (repo / "shared.txt").read_text() == run_git(repo, "show", f"{spawned[0]['branch']}:shared.txt")

    assert len(worktrees(repo)) == 4
    deleted = echs_ok(state, "rm", parent)["deleted"]
    assert set(deleted) == {parent, *children}
    assert worktrees(repo) == [str(repo)]  # the worktrees went with the threads ...
    assert len(run_git(repo, "branch", "--list", "echs/*").split()) == 3  # ... their branches stayed
    assert run_git(repo, "for-each-ref", "refs/echsd/") == ""


def test_new_with_worktree_and_rm_keep_worktree(serve: Serve, tmp_path: Path) -> None:
    state = serve.state_dir
    repo = make_repo(tmp_path / "proj", {"a.txt": "committed\n", "sub/b.txt": "b\n"})
    (repo / "a.txt").write_text("uncommitted\n")
    (repo / "untracked.txt").write_text("new\n")
    made = echs(state, "new", "--cwd", str(repo / "sub"), "--worktree")
    assert made.returncode == 0, made.stderr
    tid = made.stdout.strip()
    assert "worktree" in made.stderr and "echs/" in made.stderr
    thread = echs_ok(state, "show", tid)
    path = Path(thread["worktree"]["path"])
    assert path.is_relative_to(state / "worktrees")  # under the state dir by default
    assert thread["config"]["cwd"] == str(path / "sub")  # the same subdirectory of the worktree
    assert thread["worktree"]["branch"] == "echs/" + tid.removeprefix("thr_")[:8]
    assert (path / "a.txt").read_text() == "uncommitted\n" and (path / "untracked.txt").read_text() == "new\n"  # what the cwd held
    assert (repo / "a.txt").read_text() == "uncommitted\n"
    base = echs_ok(state, "new", "--cwd", str(repo), "--worktree", "--base", "main")
    base_path = Path(base["worktree"]["path"])
    assert (base_path / "a.txt").read_text() == "committed\n" and not (base_path / "untracked.txt").exists()
    bad = echs(state, "new", "--cwd", str(repo), "--worktree", "--base", "no-such-ref")
    assert bad.returncode == 1 and "no-such-ref" in bad.stderr
    assert echs(state, "new", "--base", "main").returncode == 2  # --base without --worktree

    kept = echs_ok(state, "rm", tid, "--keep-worktree")
    assert kept["deleted"] == [tid] and path.is_dir() and str(path) in worktrees(repo)
    echs_ok(state, "rm", base["thread_id"])
    assert not base_path.exists()
    run_git(repo, "worktree", "remove", "--force", str(path))  # the kept one is the user's to remove
    assert worktrees(repo) == [str(repo)]

    plain = tmp_path / "plain"
    plain.mkdir()
    outside = echs(state, "new", "--cwd", str(plain), "--worktree", "--json")
    assert outside.returncode == 0, outside.stderr
    answer = json.loads(outside.stdout)
    assert answer["worktree"] is None and "not in a git repository" in answer["note"]
    assert echs_ok(state, "show", answer["thread_id"])["config"]["cwd"] == str(plain)
    echs_ok(state, "rm", answer["thread_id"])
