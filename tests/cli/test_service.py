"""Running echsd as a systemd user service: the unit file (checked by ``systemd-analyze
verify``), ``echsd install-service``, and the sd_notify messages the daemon sends on a
NOTIFY_SOCKET the test binds (READY=1 once the socket accepts, WATCHDOG=1, STOPPING=1)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from echsd.service.sdnotify import Notifier
from echsd.service.unit import SHIPPED_EXEC, render_unit
from tests.cli.helpers import ECHSD, WAIT_S, Serve, clean_env, echs

ROOT = Path(__file__).parents[2]
SHIPPED = ROOT / "systemd" / "echsd.service"


def install(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([ECHSD, "install-service", *args], env=env, capture_output=True, text=True, timeout=WAIT_S)


def analyze_verify(unit: Path, home: Path) -> subprocess.CompletedProcess[str]:
    runtime = home / "runtime"
    runtime.mkdir(mode=0o700, exist_ok=True)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "XDG_RUNTIME_DIR": str(runtime)}
    return subprocess.run(["systemd-analyze", "verify", "--user", str(unit)], env=env, capture_output=True, text=True, timeout=60)


needs_analyze = pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")


def test_shipped_unit_is_the_template() -> None:
    assert SHIPPED.read_text() == render_unit(SHIPPED_EXEC)
    assert not (ROOT / "systemd" / "echsd.socket").exists()  # no socket activation: not shipped


@needs_analyze
def test_systemd_analyze_accepts_the_units(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "echsd").symlink_to(ECHSD)  # what %h/.local/bin/echsd names
    shipped = analyze_verify(SHIPPED, home)
    assert shipped.returncode == 0 and shipped.stdout + shipped.stderr == "", shipped.stderr

    env = clean_env(home, XDG_CONFIG_HOME=str(tmp_path / "config"), PATH="/usr/bin:/bin:/opt/with space/bin")
    assert install(env, "--user", "--no-enable").returncode == 0
    written = analyze_verify(tmp_path / "config" / "systemd" / "user" / "echsd.service", home)
    assert written.returncode == 0 and written.stdout + written.stderr == "", written.stderr


def test_install_service_writes_the_unit(tmp_path: Path) -> None:
    env = clean_env(tmp_path, XDG_CONFIG_HOME=str(tmp_path / "config"), PATH="/usr/bin:/bin:/opt/50%/bin")
    result = install(env, "--user", "--no-enable")
    assert result.returncode == 0, result.stderr
    unit = tmp_path / "config" / "systemd" / "user" / "echsd.service"
    assert str(unit) in result.stdout
    text = unit.read_text()
    assert f"ExecStart={ECHSD} serve\n" in text and "Type=notify\n" in text and "NotifyAccess=main\n" in text
    assert "Environment=PATH=/usr/bin:/bin:/opt/50%%/bin\n" in text  # the shell's PATH, % escaped
    assert install(env, "--user", "--no-enable", "--no-path").returncode == 0
    assert "PATH=" not in unit.read_text()
    assert install(env).returncode == 2  # --user is required


def test_install_service_runs_systemctl_and_reports_failures(tmp_path: Path) -> None:
    """A stand-in ``systemctl`` records its arguments (the real one would touch the
    user's session); then one that fails, and none at all."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    fake = bin_dir / "systemctl"
    fake.write_text(f'#!/bin/sh\necho "$@" >> {calls}\n')
    fake.chmod(0o755)
    env = clean_env(tmp_path, XDG_CONFIG_HOME=str(tmp_path / "config"), PATH=f"{bin_dir}:/usr/bin:/bin")
    result = install(env, "--user")
    assert result.returncode == 0, result.stderr
    assert calls.read_text().splitlines() == ["--user daemon-reload", "--user enable --now echsd.service"]

    fake.write_text("#!/bin/sh\necho 'Failed to connect to bus: No medium found' >&2\nexit 1\n")
    failed = install(env, "--user")
    assert failed.returncode == 1
    assert failed.stderr.count("\n") == 1 and "Failed to connect to bus" in failed.stderr

    empty = tmp_path / "empty"
    empty.mkdir()
    missing = install(clean_env(tmp_path, XDG_CONFIG_HOME=str(tmp_path / "config"), PATH=str(empty)), "--user")
    assert missing.returncode == 1 and "systemctl not found" in missing.stderr and missing.stderr.count("\n") == 1


def receive(sock: socket.socket) -> str:
    sock.settimeout(WAIT_S)
    return sock.recv(4096).decode()


def test_daemon_notifies_ready_watchdog_and_stopping(tmp_path: Path) -> None:
    path = tmp_path / "notify"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(str(path))
        env = clean_env(tmp_path, NOTIFY_SOCKET=str(path), WATCHDOG_USEC="200000")
        serve = Serve(tmp_path / "state", env=env)
        try:
            first = receive(sock)
            assert "READY=1" in first.splitlines()
            assert echs(serve.state_dir, "status").returncode == 0  # ready means accepting
            assert receive(sock) == "WATCHDOG=1" and receive(sock) == "WATCHDOG=1"
            assert serve.terminate() == 0
            notices = []
            while "STOPPING=1" not in notices:
                notices.extend(receive(sock).splitlines())
        finally:
            serve.kill()


def test_notifier_abstract_socket_missing_socket_and_environment(tmp_path: Path) -> None:
    name = f"echsd-test-{os.getpid()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        environ = {"NOTIFY_SOCKET": "@" + name, "WATCHDOG_USEC": "3000000", "WATCHDOG_PID": str(os.getpid()), "OTHER": "x"}
        notifier = Notifier.from_environ(environ)
        assert environ == {"OTHER": "x"}  # the tools the agents run do not inherit them
        assert notifier.watchdog_s == 3.0
        assert notifier.notify("READY=1", "STATUS=ok")
        assert receive(sock) == "READY=1\nSTATUS=ok"
    gone = Notifier.from_environ({"NOTIFY_SOCKET": str(tmp_path / "nobody-listens")})
    assert gone.notify("READY=1") is False and gone.notify("STOPPING=1") is False  # never raises
    assert Notifier.from_environ({}).notify("READY=1") is False
    assert Notifier.from_environ({"WATCHDOG_USEC": "100", "WATCHDOG_PID": "1"}).watchdog_s is None  # another process's
