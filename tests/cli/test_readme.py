"""The README keeps up with the code a newcomer meets: every ``[tuning]`` knob, wire error
code, built-in tool, shipped agent type and agent type setting is documented, and the first
steps say how to reach ``echs``."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

from echsd.agent_types import FIELDS, SHIPPED
from echsd.settings import Tuning
from echsd.tools.registry import builtin_tools
from echsd.wire.schema import ERROR_CODES

README = (Path(__file__).parents[2] / "README.md").read_text()


def test_every_tuning_knob_is_in_the_table() -> None:
    documented = set(re.findall(r"^\| `(\w+)` \| [^|]+ \| [^|]+ \|", README, re.MULTILINE))
    missing = [f.name for f in fields(Tuning) if f.name not in documented]
    assert missing == []


def test_every_error_code_is_explained() -> None:
    missing = [code for code in ERROR_CODES if f"| `{code}` |" not in README]
    assert missing == []


def test_every_tool_and_agent_type_is_in_its_table() -> None:
    tools = README.split("## Tools the model gets", 1)[1].split("\n## ", 1)[0]
    rows = " ".join(line.split(" | ")[0] for line in tools.splitlines() if line.startswith("| `"))
    assert [name for name in builtin_tools() if f"`{name}`" not in rows] == []
    types = {line.split("`")[1] for line in tools.split("Agent types", 1)[1].splitlines() if line.startswith("| `")}
    assert types == set(SHIPPED)
    assert all(f"`{field}`" in tools.split("[agent_types.NAME]", 1)[1] for field in FIELDS)


def test_the_first_steps_reach_a_working_echs() -> None:
    steps = README.split("### Your first thread", 1)[1].split("\n## ", 1)[0]
    assert "bin/echs" in steps and "PATH" in steps  # echs is not on PATH after make run
    assert "--state-dir" in steps and "ECHS_STATE_DIR" in steps  # echs must use the daemon's
    assert "sandboxed" in steps and "full-access" in steps  # what the model's commands may do, and how to lift it
    assert "## Troubleshooting" in README and "unix_socket = false" in README


def test_relative_links_lead_to_files() -> None:
    root = Path(__file__).parents[2]
    targets = re.findall(r"\]\(([^)#:\s]+)(?:#[^)]*)?\)", README)
    missing = [target for target in targets if not (root / target).exists()]
    assert targets and missing == []


def test_the_model_section_matches_the_catalog() -> None:
    from echsd.codex.catalog import default_catalog

    models = README.split("### Models", 1)[1].split("\n### ", 1)[0]
    catalog = default_catalog()
    for provider in ("codex", "openai"):
        assert f"`{catalog.recommended(provider)}`" in models
    family = sorted(info.model for info in catalog.models() if info.family == "gpt-6")
    assert family and sorted(set(re.findall(r"`(gpt-6[^`]*)`", models)) - {"gpt-6*"}) == family
    for layer in ("family rules", "shipped", "endpoint", "config", "SOURCE", "models-cache.json"):
        assert layer in models, layer
