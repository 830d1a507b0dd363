"""``echs show`` shows ``chain``, ``steps`` and a sub-agent's ``agent_type`` (its parent lists
its children with theirs); ``echs history`` shows an apply_patch call as the patch (its head
and tail) with its result, never as raw JSON cut mid-line."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.helpers import echs, new_thread
from tests.helpers import mock_directive
from tests.threads.test_subagents import child_task, spawn, wait


def test_show_has_chain_steps_and_agent_types(state: Path, tmp_path: Path) -> None:
    parent = new_thread(state, "--cwd", str(tmp_path))
    plain = echs(state, "show", parent).stdout
    assert "  steps         1 turn per input" in plain and "  chain         off" in plain
    assert echs(state, "config", parent, "chain=true", "steps=4").returncode == 0
    configured = echs(state, "show", parent).stdout
    assert "  steps         up to 4 turns per input" in configured and "  chain         on" in configured
    assert echs(state, "config", parent, "steps=1").returncode == 0

    turn = mock_directive([{"calls": [spawn(child_task("look around", "seen"), agent_type="explorer")]}, {"calls": [wait()]}, {"text": "ok"}])
    assert echs(state, "send", parent, turn, "--wait").returncode == 0, "the sub-agent's turn"
    (child,) = json.loads(echs(state, "show", parent, "--json").stdout)["children"]
    assert f"  children      {child} (explorer)" in echs(state, "show", parent).stdout
    shown = echs(state, "show", child).stdout
    assert "  agent type    explorer" in shown and f"  parent        {parent}" in shown


PATCH = "\n".join(
    ["*** Begin Patch", "*** Add File: notes.txt", *(f"+line {n}" for n in range(1, 41)), "*** End Patch"]
)


def test_history_shows_an_apply_patch_call_as_the_patch(state: Path, tmp_path: Path) -> None:
    tid = new_thread(state, "--cwd", str(tmp_path))
    turn = mock_directive([{"calls": [{"name": "apply_patch", "arguments": {"input": PATCH}}]}, {"text": "written"}])
    assert echs(state, "send", tid, turn, "--wait").returncode == 0
    assert (tmp_path / "notes.txt").read_text().splitlines()[-1] == "line 40"
    items = json.loads(echs(state, "history", tid, "--json").stdout)
    call = next(item for item in items if item.get("name") == "apply_patch")
    lines = echs(state, "history", tid).stdout.splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith("call › apply_patch"))
    assert lines[start] == f"call › apply_patch  [{call['call_id']}]"
    assert lines[start + 1 : start + 4] == ["  *** Begin Patch", "  *** Add File: notes.txt", "  +line 1"]
    assert "  … (29 more lines)" in lines and "  +line 40" in lines and "  *** End Patch" in lines
    assert not any("{" in line and "input" in line for line in lines[start : start + 20])  # no raw JSON
    output = lines.index(next(line for line in lines[start:] if line.startswith("output ›")))
    assert "notes.txt" in "\n".join(lines[output : output + 4])  # its result, as for any tool
