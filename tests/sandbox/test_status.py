"""What ``echs status`` says of the sandbox, and what a daemon without Landlock does with a
thread that asks for it: refuses it clearly, unless ``sandbox_fallback = "unconfined"``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from echsd.tools.sandbox import landlock
from tests.cli.helpers import Serve, clean_env, echs, new_thread
from tests.sandbox.test_tool_loop import run_calls, shell


def serve_with(state: Path, config: str) -> Serve:
    state.mkdir(parents=True, mode=0o700)
    (state / "config.toml").write_text(config)
    (state.parent / "home").mkdir(exist_ok=True)
    return Serve(state, env=clean_env(state.parent / "home"))


def test_status_names_the_mechanism_and_abi(tmp_path: Path) -> None:
    abi = landlock.abi_version()
    daemon = serve_with(tmp_path / "state", "")
    try:
        status = json.loads(echs(daemon.state_dir, "status", "--json").stdout)
        sandbox = status["sandbox"]
        assert sandbox["landlock_abi"] == abi
        if abi:
            assert sandbox["mechanism"].startswith("landlock")
            assert sandbox["filesystem"] == f"landlock (ABI {abi})"
            assert "workspace-write" in sandbox["enforces"]
        assert sandbox["fallback"] == "refuse"
        text = echs(daemon.state_dir, "status").stdout
        assert "sandbox" in text and (f"landlock (ABI {abi})" in text if abi else "no filesystem sandbox" in text)
    finally:
        daemon.kill()


def test_without_landlock_a_workspace_write_thread_is_refused(tmp_path: Path) -> None:
    daemon = serve_with(tmp_path / "state", 'sandbox_disable = ["landlock"]\n')
    try:
        assert any("sandbox incomplete" in line for line in daemon.lines)  # said at start
        status = json.loads(echs(daemon.state_dir, "status", "--json").stdout)["sandbox"]
        assert status["landlock_abi"] == 0 and "landlock" not in status["mechanism"] and "landlock" in status["disabled"]
        refused = echs(daemon.state_dir, "new", "--cwd", str(tmp_path))
        assert refused.returncode == 1
        assert "workspace-write" in refused.stderr and "Landlock" in refused.stderr and "sandbox_fallback" not in refused.stdout
        assert echs(daemon.state_dir, "new", "--cwd", str(tmp_path), "--sandbox", "read-only").returncode == 1
        assert echs(daemon.state_dir, "new", "--cwd", str(tmp_path), "--sandbox", "full-access").returncode == 0
        tid = new_thread(daemon.state_dir, "--cwd", str(tmp_path), "--sandbox", "full-access")
        changed = echs(daemon.state_dir, "config", tid, "sandbox=workspace-write")
        assert changed.returncode == 1 and "Landlock" in changed.stderr
    finally:
        daemon.kill()


def test_the_unconfined_fallback_runs_such_threads_and_says_so(tmp_path: Path) -> None:
    if landlock.abi_version() < 1:
        pytest.skip("needs a kernel with Landlock to tell the disabled case from the absent one")
    daemon = serve_with(tmp_path / "state", 'sandbox_disable = ["landlock"]\nsandbox_fallback = "unconfined"\n')
    cwd, outside = tmp_path / "cwd", tmp_path / "outside"
    cwd.mkdir()
    outside.mkdir()
    try:
        tid = new_thread(daemon.state_dir, "--cwd", str(cwd))
        (output,) = run_calls(daemon, tid, [shell(f"echo unconfined > {outside}/file")])
        assert "ran without the sandbox" in output and "Landlock" in output
        assert (outside / "file").read_text() == "unconfined\n"
        assert "threads run unconfined" in echs(daemon.state_dir, "status").stdout
    finally:
        daemon.kill()
