"""The daemon's built-in mock (``--provider mock``) is no network listener: it serves on a
unix socket in the private state dir, which only the daemon's user reaches."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

from tests.cli.helpers import ECHSD, Serve, clean_env, echs, new_thread

TCP_LISTEN = "0A"


def listening_tcp_ports(pid: int) -> list[int]:
    """The TCP ports process ``pid`` listens on (its socket inodes in /proc/net/tcp{,6})."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    ports = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == TCP_LISTEN and fields[9] in inodes:
                ports.append(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def test_builtin_mock_listens_on_no_port(tmp_path: Path) -> None:
    state = tmp_path / "state"
    daemon = Serve(state)  # only its unix socket: --listen adds no TCP door
    try:
        assert daemon.process is not None
        assert listening_tcp_ports(daemon.process.pid) == []
        mock_socket = state / "mock.sock"
        assert stat.S_ISSOCK(os.lstat(mock_socket).st_mode)
        assert stat.S_IMODE(os.lstat(mock_socket).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(state).st_mode) == 0o700
        thread = new_thread(state)
        reply = echs(state, "send", thread, "hello there", "--wait")
        assert reply.returncode == 0, reply.stderr
        assert "mock reply to: hello there" in reply.stdout
    finally:
        assert daemon.terminate() == 0
    assert not (state / "mock.sock").exists()


def test_probe_of_the_mock_answers_through_its_socket(tmp_path: Path) -> None:
    result = subprocess.run(
        [ECHSD, "probe", "--provider", "mock", "--state-dir", str(tmp_path / "state"), "hi"],
        env=clean_env(tmp_path), capture_output=True, text=True, timeout=30,
    )
    assert result.returncode == 0, result.stderr
    assert "mock reply to: hi" in result.stdout
