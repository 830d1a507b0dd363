"""Thread config validation and hot-swap edits (sans-IO)."""

from __future__ import annotations

from pathlib import Path

import pytest

from echsd.errors import BadRequest
from echsd.threads.config import apply_tools_spec, new_config, reconfigure

KNOWN = ("exec_command", "read_file", "apply_patch")


def test_tools_spec_edits_and_replacement() -> None:
    assert apply_tools_spec(KNOWN, "-read_file", KNOWN) == ("exec_command", "apply_patch")
    assert apply_tools_spec(("exec_command",), "+apply_patch,+exec_command", KNOWN) == ("exec_command", "apply_patch")
    assert apply_tools_spec(KNOWN, ["read_file"], KNOWN) == ("read_file",)
    assert apply_tools_spec(KNOWN, "", KNOWN) == ()
    with pytest.raises(BadRequest, match="unknown tool"):
        apply_tools_spec(KNOWN, "+nope", KNOWN)
    with pytest.raises(BadRequest, match="not both"):
        apply_tools_spec(KNOWN, "read_file,-exec_command", KNOWN)
    with pytest.raises(BadRequest):
        apply_tools_spec(KNOWN, 42, KNOWN)


def test_new_config_defaults_and_validation(tmp_path: Path) -> None:
    config = new_config({"cwd": str(tmp_path)}, default_model="m", default_tools=KNOWN, known_tools=KNOWN)
    assert config.cwd == str(tmp_path) and config.model == "m" and config.tools == KNOWN
    assert "{{cwd}}" in config.instructions and str(tmp_path) in config.rendered_instructions()
    for bad in ({"cwd": "relative"}, {"cwd": str(tmp_path / "missing")}, {"reasoning": "max"}, {"model": ""}, {"model": 3}):
        with pytest.raises(BadRequest):
            new_config(bad, default_model="m", default_tools=KNOWN, known_tools=KNOWN)


def test_reconfigure_reports_changes(tmp_path: Path) -> None:
    config = new_config({"cwd": str(tmp_path)}, default_model="m", default_tools=KNOWN, known_tools=KNOWN)
    updated, changed = reconfigure(config, {"model": "m2", "reasoning": "medium", "tools": "-apply_patch"}, KNOWN)
    assert changed == ["model", "tools"]
    assert updated.tools == ("exec_command", "read_file")
    for bad in ({}, {"colour": "red"}, "model=x", {"cwd": "rel"}):
        with pytest.raises(BadRequest):
            reconfigure(config, bad, KNOWN)
