"""Thread config validation and hot-swap edits (sans-IO), against the shipped model catalog."""

from __future__ import annotations

from pathlib import Path

import pytest

from echsd.codex import default_catalog
from echsd.errors import BadRequest
from echsd.threads.config import ConfigRules, apply_tools_spec, new_config, reconfigure

KNOWN = ("exec_command", "read_file", "apply_patch")
RULES = ConfigRules(known_tools=KNOWN, catalog=default_catalog())


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
    config = new_config({"cwd": str(tmp_path)}, default_model="m", default_tools=KNOWN, rules=RULES)
    assert config.cwd == str(tmp_path) and config.model == "m" and config.tools == KNOWN
    assert config.writes == "allow" and config.approval == "never"
    assert config.instructions == ""  # the model's base prompt, from the catalog
    assert config.rendered_instructions("work in {{cwd}}") == f"work in {tmp_path}"
    for bad in ({"cwd": "relative"}, {"cwd": str(tmp_path / "missing")}, {"reasoning": "maximal"}, {"model": ""}, {"model": 3}, {"writes": "maybe"}):
        with pytest.raises(BadRequest):
            new_config(bad, default_model="m", default_tools=KNOWN, rules=RULES)


def test_efforts_follow_the_model() -> None:
    catalog = default_catalog()
    plain = new_config({"model": "gpt-4.1"}, default_model="m", default_tools=KNOWN, rules=RULES)
    assert plain.reasoning == "none"  # a model that does not reason gets no effort
    with pytest.raises(BadRequest, match="does not reason"):
        new_config({"model": "gpt-4.1", "reasoning": "high"}, default_model="m", default_tools=KNOWN, rules=RULES)
    reasoning = new_config({"model": "gpt-5.5"}, default_model="m", default_tools=KNOWN, rules=RULES)
    assert reasoning.reasoning == catalog.default_effort("gpt-5.5")
    refused = [effort for effort in ("none", "minimal", "low", "medium", "high", "xhigh") if effort not in catalog.get("gpt-5.1").efforts]
    assert refused, "gpt-5.1 refuses some effort"
    with pytest.raises(BadRequest, match="accepts reasoning"):
        new_config({"model": "gpt-5.1", "reasoning": refused[0]}, default_model="m", default_tools=KNOWN, rules=RULES)
    switched, changed = reconfigure(reasoning, {"model": "gpt-4.1"}, RULES)
    assert switched.reasoning == "none" and changed == ["model", "reasoning"]


def test_reconfigure_reports_changes(tmp_path: Path) -> None:
    config = new_config({"cwd": str(tmp_path)}, default_model="m", default_tools=KNOWN, rules=RULES)
    updated, changed = reconfigure(config, {"model": "m2", "reasoning": "medium", "tools": "-apply_patch", "approval": "on-write"}, RULES)
    assert changed == ["model", "tools", "approval"]
    assert updated.tools == ("exec_command", "read_file") and updated.approval == "on-write"
    for bad in ({}, {"colour": "red"}, "model=x", {"cwd": "rel"}, {1: "x"}, {"approval": "sometimes"}):
        with pytest.raises(BadRequest):
            reconfigure(config, bad, RULES)


@pytest.mark.parametrize("cwd", ["~nosuchuser_echsd/x", "/" + "a" * 5000, "/tmp/nul\x00byte"])
def test_unusable_paths_are_bad_requests(cwd: str) -> None:
    with pytest.raises(BadRequest, match="cwd"):
        new_config({"cwd": cwd}, default_model="m", default_tools=KNOWN, rules=RULES)
