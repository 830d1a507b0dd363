"""The database URL (and its password) need not be on the command line, where every local
user reads it: ``echsd serve`` takes it from ``ECHS_STORE`` or from a private file
(``--store-file``; a file group or others may read is refused with a clear line); a
password given with ``--store`` still works, with a warning at start that never shows it;
and the URL never reaches the environment of the model's commands."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Iterator
from urllib.parse import quote

import pytest

from tests.cli.helpers import ECHSD, WAIT_S, Serve, clean_env, echs, json_lines, new_thread
from tests.helpers import mock_directive
from tests.pgcluster import TempCluster

PASSWORD = "s3cret-Passw0rd"


def _serve(state: Path, *flags: str, env: dict[str, str]) -> Serve:
    """``echsd serve`` on exactly the store the test gives (flags or environment)."""
    return Serve(state, *flags, env=env, suite_store=False)


def _cmdline(serve: Serve) -> bytes:
    assert serve.process is not None
    return Path(f"/proc/{serve.process.pid}/cmdline").read_bytes()


def _stop(serve: Serve) -> str:
    """SIGTERM, wait, and everything it logged."""
    assert serve.terminate() == 0
    return "".join(serve.lines)


@pytest.fixture
def state(tmp_path: Path) -> Iterator[Path]:
    directory = tmp_path / "state"
    directory.mkdir(mode=0o700)
    yield directory


def _store_file(tmp_path: Path, url: str, mode: int) -> Path:
    path = tmp_path / "store-url"
    path.write_text(f"# the store of the test daemon\n{url}\n")
    path.chmod(mode)
    return path


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o620])
def test_a_store_file_others_may_access_is_refused(state: Path, tmp_path: Path, mode: int) -> None:
    path = _store_file(tmp_path, "sqlite:///elsewhere.db", mode)
    result = subprocess.run(
        [ECHSD, "serve", "--provider", "mock", "--state-dir", str(state), "--store-file", str(path)],
        env=clean_env(tmp_path), capture_output=True, text=True, timeout=WAIT_S,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"echsd: refusing the store file {path} (from --store-file): group or others may access it "
        f"(mode {mode:04o}); make it private with `chmod 600 {path}`"
    ]
    assert not (state / "elsewhere.db").exists()


@pytest.mark.parametrize("how", ["--store-file", "ECHS_STORE_FILE", "ECHS_STORE"])
def test_the_store_from_a_private_file_or_the_environment(state: Path, tmp_path: Path, how: str) -> None:
    url = "sqlite:///elsewhere.db"
    path = _store_file(tmp_path, url, 0o600)
    flags = ("--store-file", str(path)) if how == "--store-file" else ()
    extra = {"ECHS_STORE_FILE": str(path)} if how == "ECHS_STORE_FILE" else {"ECHS_STORE": url} if how == "ECHS_STORE" else {}
    daemon = _serve(state, *flags, env=clean_env(tmp_path, **extra))
    try:
        assert b"sqlite:" not in _cmdline(daemon)
        assert (state / "elsewhere.db").exists() and not (state / "echsd.db").exists()
        tid = new_thread(state)
        listing = mock_directive([{"calls": [{"name": "exec_command", "arguments": {"cmd": "env; echo END-OF-ENV"}}]}, {"text": "ok"}])
        result = echs(state, "send", tid, listing, "--wait", "--json")
        assert result.returncode == 0, result.stderr
        (output,) = [e["data"]["output"] for e in json_lines(result.stdout) if e["event"] == "tool.completed"]
        variables = {line.split("=", 1)[0] for line in output.splitlines() if "=" in line}
        assert "END-OF-ENV" in output and "HOME" in variables  # the command ran and listed its environment
        assert "ECHS_STORE" not in variables and url not in output  # the URL never reaches the model's commands
    finally:
        log = _stop(daemon)
    assert "password" not in log


def test_a_password_on_the_command_line_is_warned_about_and_never_shown(state: Path, pg_cluster: TempCluster) -> None:
    """(The throwaway cluster trusts local connections: the password is accepted unused.)"""
    pg_cluster.create_database("echs_store_secret")
    with_password = f"postgresql://postgres:{PASSWORD}@/echs_store_secret?host={quote(str(pg_cluster.socket_dir), safe='')}"
    log = _stop(_serve(state, "--store", with_password, env=clean_env(state.parent)))
    warnings = [line for line in log.splitlines() if "password is on the command line" in line]
    assert len(warnings) == 1 and "ECHS_STORE" in warnings[0] and "--store-file" in warnings[0] and ".pgpass" in warnings[0]
    assert PASSWORD not in log

    quiet = _serve(state, env=clean_env(state.parent, ECHS_STORE=with_password))
    try:
        assert PASSWORD.encode() not in _cmdline(quiet)
    finally:
        log = _stop(quiet)
    assert "password is on the command line" not in log and PASSWORD not in log
