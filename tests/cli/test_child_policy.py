"""``echs new --parent P``: the child's ``writes`` and ``approval`` are never looser than
P's unless ``--loosen-policy`` says so (``echsd.threads.policy``); keys not given are P's."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.helpers import echs, new_thread


def config_of(state: Path, thread: str) -> dict[str, str]:
    shown = echs(state, "show", thread, "--json")
    assert shown.returncode == 0, shown.stderr
    return json.loads(shown.stdout)["config"]  # type: ignore[no-any-return]


def test_a_child_takes_its_parent_s_policy(state: Path) -> None:
    parent = new_thread(state, "--approval", "always", "--writes", "dry-run")
    child = new_thread(state, "--parent", parent)
    assert {k: config_of(state, child)[k] for k in ("approval", "writes")} == {"approval": "always", "writes": "dry-run"}
    stricter = new_thread(state, "--parent", parent, "--writes", "deny")
    assert config_of(state, stricter)["writes"] == "deny"


def test_a_looser_child_is_refused_unless_asked_explicitly(state: Path) -> None:
    parent = new_thread(state, "--approval", "on-write", "--writes", "dry-run")
    for option, value in (("--approval", "never"), ("--writes", "allow")):
        refused = echs(state, "new", "--parent", parent, option, value)
        assert refused.returncode == 1 and "looser than the parent's" in refused.stderr and "--loosen-policy" in refused.stderr
    loosened = new_thread(state, "--parent", parent, "--approval", "never", "--loosen-policy")
    assert {k: config_of(state, loosened)[k] for k in ("approval", "writes")} == {"approval": "never", "writes": "dry-run"}
    misused = echs(state, "new", "--loosen-policy")
    assert misused.returncode == 2 and "--parent" in misused.stderr
