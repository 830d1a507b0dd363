"""The ``echsd`` admin verbs' own manners: each shows only the options it uses, and
``token`` never creates a state directory from a typo."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.cli.helpers import ECHSD, clean_env


def echsd(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([ECHSD, *args], capture_output=True, text=True, env=clean_env(home), timeout=60)


def test_each_verb_lists_only_the_options_it_uses(tmp_path: Path) -> None:
    probe = echsd(tmp_path, "probe", "--help").stdout
    assert "--provider" in probe and "--base-url" in probe and "--model" in probe
    for unused in ("--listen", "--allow-remote", "--store", "--node-id"):
        assert unused not in probe, unused
    vacuum = echsd(tmp_path, "vacuum", "--help").stdout
    assert "--state-dir" in vacuum and "--store" in vacuum and "--provider" not in vacuum and "--listen" not in vacuum
    serve = echsd(tmp_path, "serve", "--help").stdout
    assert all(flag in serve for flag in ("--listen", "--allow-remote", "--store", "--node-id", "--provider", "--app-server"))


def test_token_refuses_a_state_dir_that_does_not_exist(tmp_path: Path) -> None:
    typo = tmp_path / "typo"
    result = echsd(tmp_path, "token", "--state-dir", str(typo))
    assert result.returncode == 1 and result.stdout == ""
    assert f"no state directory {typo}" in result.stderr
    assert not typo.exists()
    real = tmp_path / "state"
    real.mkdir(mode=0o700)
    first = echsd(tmp_path, "token", "--state-dir", str(real))
    assert first.returncode == 0 and len(first.stdout.strip()) >= 32
    assert echsd(tmp_path, "token", "--state-dir", str(real)).stdout == first.stdout
