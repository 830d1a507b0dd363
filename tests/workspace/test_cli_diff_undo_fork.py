"""``echs diff``, ``echs undo`` and ``echs fork`` through ``echsd serve``, as a user runs them:
a turn that patches a file and writes another with a shell command; its diff printed; undo
putting both back without touching the user's branch, index or stash; a fork at turn 1
whose history ends there and which runs a turn of its own (also in a worktree made from
turn 1's snapshot)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from echsd.threads.context import is_context_message
from tests.cli.helpers import Serve, echs
from tests.helpers import mock_directive
from tests.workspace.gitrepo import UserState, echs_ok, make_repo, run_git, worktrees

PATCH = "*** Begin Patch\n*** Update File: app.py\n@@\n-print('old')\n+print('new')\n*** End Patch\n"


def turn(state: Path, tid: str, text: str, steps: list[dict[str, Any]]) -> None:
    sent = echs(state, "send", tid, f"{text}\n" + mock_directive(steps), "--wait")
    assert sent.returncode == 0, sent.stderr


def test_echs_diff_and_undo(serve: Serve, tmp_path: Path) -> None:
    state = serve.state_dir
    repo = make_repo(tmp_path / "proj", {"app.py": "print('old')\n"})
    (repo / "wip.txt").write_text("the user's own work\n")
    run_git(repo, "stash", "push", "-q", "--include-untracked", "-m", "older work")
    run_git(repo, "add", "app.py")
    before = UserState.of(repo)
    tid = echs_ok(state, "new", "--cwd", str(repo))["thread_id"]
    calls = [{"name": "apply_patch", "arguments": {"input": PATCH}}, {"name": "exec_command", "arguments": {"cmd": "echo x > new.txt"}}]
    turn(state, tid, "change two files", [{"calls": calls}, {"text": "done"}])

    shown = echs(state, "diff", tid)
    assert shown.returncode == 0, shown.stderr
    assert "diff --git a/app.py b/app.py" in shown.stdout and "+print('new')" in shown.stdout
    assert "diff --git a/new.txt b/new.txt" in shown.stdout and "+x" in shown.stdout
    assert "\x1b[" not in shown.stdout  # plain in a pipe
    as_json = echs_ok(state, "diff", tid, "--turn", "1")
    assert sorted(as_json["paths"]) == ["app.py", "new.txt"] and as_json["turn"] == 1
    assert echs(state, "diff", tid, "--turn", "7").returncode == 1

    undone = echs(state, "undo", tid)
    assert undone.returncode == 0, undone.stderr
    assert "restored: app.py" in undone.stdout and "removed: new.txt" in undone.stdout
    assert (repo / "app.py").read_text() == "print('old')\n" and not (repo / "new.txt").exists()
    assert UserState.of(repo) == before
    assert echs_ok(state, "history", tid) == []
    assert "no turn" in echs(state, "diff", tid).stdout
    turn(state, tid, "again", [{"text": "again"}])  # the environment the undone turn told went with it: told again
    again = echs_ok(state, "history", tid)
    assert is_context_message(again[0]) and again[1]["content"][0]["text"].startswith("again"), again[:2]


def test_echs_fork_at_turn_1_runs_on_its_own(serve: Serve, tmp_path: Path) -> None:
    state = serve.state_dir
    repo = make_repo(tmp_path / "proj", {"notes.txt": "start\n"})
    tid = echs_ok(state, "new", "--cwd", str(repo))["thread_id"]
    turn(state, tid, "first", [{"calls": [{"name": "exec_command", "arguments": {"cmd": "echo one >> notes.txt"}}]}, {"text": "one"}])
    turn(state, tid, "second", [{"calls": [{"name": "exec_command", "arguments": {"cmd": "echo two >> notes.txt"}}]}, {"text": "two"}])
    source_history = echs_ok(state, "history", tid)

    forked = echs(state, "fork", tid, "--at-turn", "1")
    assert forked.returncode == 0, forked.stderr
    fork = forked.stdout.strip()
    shown = echs_ok(state, "show", fork)
    assert shown["forked_from"] == tid and shown["forked_at_turn"] == 1 and shown["config"]["cwd"] == str(repo)
    history = echs_ok(state, "history", fork)
    users = [item for item in history if item.get("role") == "user" and not is_context_message(item)]  # not the environment's
    assert len(users) == 1 and users[0]["content"][0]["text"].startswith("first")
    assert history[-1]["type"] == "message" and history[-1]["role"] == "assistant"  # it ends with turn 1's reply
    assert history == source_history[: len(history)]

    turn(state, fork, "third, on the fork", [{"text": "the fork answers"}])
    assert echs_ok(state, "history", tid) == source_history  # the source is untouched
    events = [json.loads(line) for line in echs(state, "events", fork, "--json").stdout.splitlines()]
    source_events = [json.loads(line) for line in echs(state, "events", tid, "--json").stdout.splitlines()]
    starts = [e["data"] for e in events if e["event"] == "turn.started"]
    assert [s["turn"] for s in starts] == [1, 2]  # its log holds turn 1 (the source's), then its own
    assert starts[0]["turn_id"] == next(e["data"]["turn_id"] for e in source_events if e["event"] == "turn.started")
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))

    in_worktree = echs_ok(state, "fork", tid, "--at-turn", "1", "--worktree")
    path = Path(in_worktree["worktree"]["path"])
    assert (path / "notes.txt").read_text() == "start\none\n"  # turn 1's end, not the cwd's state now
    assert (repo / "notes.txt").read_text() == "start\none\ntwo\n"
    for thread in (fork, in_worktree["thread_id"], tid):
        echs_ok(state, "rm", thread)
    assert worktrees(repo) == [str(repo)] and run_git(repo, "for-each-ref", "refs/echsd/") == ""
