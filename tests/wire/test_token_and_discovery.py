"""The token file and how clients find the daemon and its token."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from echsd.wire.discovery import DiscoveryError, Target, parse_url, resolve_target, resolve_token
from echsd.wire.token import ensure_token, read_token, rotate_token, token_matches


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_token_is_created_once_0600_and_rotated_atomically(tmp_path: Path) -> None:
    path = tmp_path / "state" / "token"
    ensure_token(path)
    first = read_token(path)
    assert _mode(path) == 0o600 and len(first) >= 40
    ensure_token(path)
    assert read_token(path) == first  # a restart never overwrites it
    os.chmod(path, 0o644)
    ensure_token(path)
    assert _mode(path) == 0o600
    second = rotate_token(path)
    assert second != first and read_token(path) == second and _mode(path) == 0o600
    assert list(path.parent.iterdir()) == [path]  # no temp file left behind
    assert token_matches(second, second) and not token_matches(first, second)


def test_echsd_token_command(tmp_path: Path) -> None:
    state = tmp_path / "s"
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-c", "from echsd.cli.echsd_main import main; main()", "token", "--state-dir", str(state), *args]
        return subprocess.run(command, capture_output=True, text=True, check=True)

    shown = run().stdout.strip()
    assert shown == read_token(state / "token") == run().stdout.strip()
    rotated = run("--rotate").stdout.strip()
    assert rotated != shown and rotated == read_token(state / "token")
    assert _mode(state / "token") == 0o600 and _mode(state) == 0o700


def test_target_precedence(tmp_path: Path) -> None:
    env = {"ECHS_SOCKET": "/env.sock", "ECHS_URL": "ws://127.0.0.1:9/v1", "ECHS_STATE_DIR": str(tmp_path)}
    assert resolve_target("/explicit.sock", None, None, env) == Target("unix", path="/explicit.sock")
    assert resolve_target(None, "ws://localhost:7", None, env) == Target("tcp", host="localhost", port=7)
    assert resolve_target(None, None, None, env) == Target("unix", path="/env.sock")
    assert resolve_target(None, None, None, {"ECHS_URL": "ws://[::1]:8/v1"}) == Target("tcp", host="::1", port=8)
    assert resolve_target(None, None, tmp_path, {}) == Target("unix", path=str(tmp_path / "echsd.sock"))
    assert resolve_target(None, None, None, {"ECHS_STATE_DIR": str(tmp_path)}).path == str(tmp_path / "echsd.sock")
    assert parse_url("tcp://127.0.0.1:5").host_header == "127.0.0.1:5"
    with pytest.raises(DiscoveryError):
        parse_url("http://x:1")
    with pytest.raises(DiscoveryError):
        parse_url("ws://nohost")


def test_token_precedence(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("from-state\n")
    (tmp_path / "other").write_text("from-file\n")
    env = {"ECHS_TOKEN": "from-env", "ECHS_TOKEN_FILE": str(tmp_path / "other")}
    assert resolve_token("explicit", None, tmp_path, env) == "explicit"
    assert resolve_token(None, tmp_path / "other", tmp_path, env) == "from-file"
    assert resolve_token(None, None, tmp_path, env) == "from-env"
    assert resolve_token(None, None, tmp_path, {"ECHS_TOKEN_FILE": str(tmp_path / "other")}) == "from-file"
    assert resolve_token(None, None, tmp_path, {}) == "from-state"
    with pytest.raises(DiscoveryError) as info:
        resolve_token(None, None, tmp_path / "missing", {})
    assert info.value.code == "unauthorized"


def test_the_client_library_imports_no_daemon_code() -> None:
    probe = "import sys, echsd.wire.client; print(sorted(m for m in sys.modules if m.startswith('echsd')))"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    for heavy in ("echsd.daemon", "echsd.store", "echsd.codex", "echsd.threads", "echsd.wire.server", "echsd.logs"):
        assert f"'{heavy}" not in loaded, loaded
