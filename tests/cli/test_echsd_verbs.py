"""The ``echsd`` admin verbs' own manners: each shows only the options it uses, and
``token`` says so when it creates a state directory (a typo would go unnoticed)."""

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


def test_token_says_when_it_creates_the_state_dir(tmp_path: Path) -> None:
    typo = tmp_path / "typo"
    created = echsd(tmp_path, "token", "--state-dir", str(typo))
    assert created.returncode == 0 and len(created.stdout.strip()) >= 32  # stdout: the token alone
    assert f"created {typo}: no daemon has used it yet" in created.stderr
    again = echsd(tmp_path, "token", "--state-dir", str(typo))
    assert again.stdout == created.stdout and again.stderr == ""
