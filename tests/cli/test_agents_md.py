"""`echs show` says which AGENTS.md files the model was given; `echs new --no-project-docs`
and `echs config ID project_docs=...` turn them off and on (the real CLI, a real daemon)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.cli.helpers import echs, new_thread


def test_show_lists_the_agents_md_files_sent(state: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    sub = repo / "app"
    sub.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "AGENTS.md").write_text("# rules\nRun the tests.\n")
    (sub / "AGENTS.md").write_text("# app rules\n")
    tid = new_thread(state, "--cwd", str(sub))
    before = echs(state, "show", tid).stdout
    assert "agents.md     - (sent at the next turn)" in before
    assert echs(state, "send", tid, "hi", "--wait").returncode == 0
    shown = echs(state, "show", tid).stdout
    lines = [line for line in shown.splitlines() if "AGENTS.md" in line]
    assert lines[0].startswith("  agents.md     ") and lines[0].endswith("repo/AGENTS.md  23 bytes")
    assert lines[1].endswith("repo/app/AGENTS.md  12 bytes")
    context = json.loads(echs(state, "show", tid, "--json").stdout)["context"]
    assert [doc["path"] for doc in context["project_docs"]] == [str(repo / "AGENTS.md"), str(sub / "AGENTS.md")]

    off = new_thread(state, "--cwd", str(sub), "--no-project-docs")
    assert json.loads(echs(state, "show", off, "--json").stdout)["config"]["project_docs"] is False
    assert echs(state, "send", off, "hi", "--wait").returncode == 0
    assert "agents.md     off (the thread's project_docs)" in echs(state, "show", off).stdout
    assert json.loads(echs(state, "config", off, "project_docs=true", "--json").stdout)["config"]["project_docs"] is True
    assert echs(state, "send", off, "again", "--wait").returncode == 0
    assert "repo/app/AGENTS.md" in echs(state, "show", off).stdout
