"""Codex's apply_patch scenario suite (../shared/conformance/apply_patch/), every scenario.

Each scenario copies ``input/`` to a temp dir, applies ``patch.txt`` there and compares the
whole tree with ``expected/``, byte for byte. Codex applies operations one by one and keeps
what ran before a failure; echsd is all-or-nothing. So a patch that fails must leave the
tree exactly as it was, and ``expected/`` must equal what the operations before the failing
one produce on their own (which is the input itself when the patch fails to parse, or
fails at its first operation).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from echsd.tools.apply_patch import DiskView, PatchApplyError, PatchError, apply_patch, parse_patch
from echsd.tools.apply_patch.commit import commit
from echsd.tools.apply_patch.model import Patch
from echsd.tools.apply_patch.plan import plan_patch
from tests.tools.patch_trees import snapshot

ENV_VAR = "ECHS_APPLY_PATCH_CONFORMANCE"
REPO_ROOT = Path(__file__).resolve().parents[2]


def _suite_dir() -> Path | None:
    candidates = [os.environ.get(ENV_VAR), REPO_ROOT.parent / "shared/conformance/apply_patch", "/work/shared/conformance/apply_patch"]
    for candidate in candidates:
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    return None


SUITE = _suite_dir()
SCENARIOS = sorted(path for path in SUITE.iterdir() if path.is_dir()) if SUITE else []


def _stage(scenario: Path, target: Path) -> None:
    target.mkdir()
    if (scenario / "input").is_dir():
        shutil.copytree(scenario / "input", target, dirs_exist_ok=True)


@pytest.mark.skipif(SUITE is None, reason=f"conformance suite not found (set {ENV_VAR} or check out ../shared)")
def test_suite_has_every_scenario() -> None:
    assert len(SCENARIOS) >= 23


@pytest.mark.skipif(SUITE is None, reason=f"conformance suite not found (set {ENV_VAR} or check out ../shared)")
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[path.name for path in SCENARIOS])
def test_scenario(scenario: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    _stage(scenario, work)
    before = snapshot(work)
    expected = snapshot(scenario / "expected")
    patch_text = (scenario / "patch.txt").read_bytes().decode("utf-8")
    try:
        apply_patch(patch_text, DiskView(work))
    except PatchError as exc:
        assert snapshot(work) == before, f"a failed patch changed files: {exc}"
        completed = exc.index if isinstance(exc, PatchApplyError) else 0
        assert completed >= 0, exc
        prefix = tmp_path / "prefix"
        _stage(scenario, prefix)
        if completed:
            operations = parse_patch(patch_text).operations[:completed]
            commit(DiskView(prefix), plan_patch(Patch(operations), DiskView(prefix)).final)
        assert snapshot(prefix) == expected, f"{scenario.name}: failed with {exc!r}, but upstream got further"
    else:
        assert snapshot(work) == expected
