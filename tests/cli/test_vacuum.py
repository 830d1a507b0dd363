"""``echsd vacuum``: gives deleted threads' space back, only while the daemon is stopped;
nothing to do on PostgreSQL."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.cli.helpers import ECHSD, Serve, clean_env, echs, new_thread
from tests.helpers import mock_directive


def _vacuum(state: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [ECHSD, "vacuum", "--state-dir", str(state), *extra], capture_output=True, text=True, env=clean_env(state.parent), timeout=60
    )


def test_vacuum_shrinks_the_database_only_while_the_daemon_is_stopped(tmp_path: Path) -> None:
    state = tmp_path / "state"
    sqlite = ("--store", "sqlite:///echsd.db")  # also when the suite runs its daemons on PostgreSQL
    daemon = Serve(state, *sqlite)
    try:
        tid = new_thread(state)
        assert echs(state, "send", tid, mock_directive({"repeat": {"chunk": "a long enough chunk ", "count": 5000}}), "--wait").returncode == 0
        assert echs(state, "rm", tid).returncode == 0
        running = _vacuum(state, *sqlite)
        assert running.returncode == 1 and "running" in running.stderr
    finally:
        daemon.terminate()
    size = (state / "echsd.db").stat().st_size
    done = _vacuum(state, *sqlite)
    assert done.returncode == 0, done.stderr
    assert "vacuumed" in done.stdout and (state / "echsd.db").stat().st_size < size / 2
    Serve(state, *sqlite).terminate()  # the daemon starts on the vacuumed file


def test_vacuum_leaves_postgresql_to_its_autovacuum(tmp_path: Path) -> None:
    result = _vacuum(tmp_path, "--store", "postgresql://nobody@127.0.0.1:1/echsd")
    assert result.returncode == 0 and "autovacuum" in result.stderr
