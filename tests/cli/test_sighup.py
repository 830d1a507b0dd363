"""SIGHUP stops ``echsd serve`` as SIGTERM does: the running turn is interrupted and saved
(reason ``shutdown``, not a crash's ``restart``), the stop is logged, and the turn's tool
processes are killed. Also when the terminal running the daemon closes (a real tmux pane
is killed: the kernel hangs up, and writes to the terminal fail from then on)."""

from __future__ import annotations

import shutil
import signal
import time
from pathlib import Path

import pytest

from tests.cli.helpers import ECHSD, WAIT_S, Serve, Tmux, clean_env, client_for, echs, gate_command, new_thread, of_type, wait_event
from tests.helpers import mock_directive, store_url_for


def _pid_gone(pid: int) -> bool:
    """No such process, or only its zombie (it has exited)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def _wait_gone(pid: int) -> None:
    deadline = time.monotonic() + WAIT_S
    while not _pid_gone(pid):
        assert time.monotonic() < deadline, f"process {pid} is still alive"
        time.sleep(0.05)  # polling a process we are not the parent of, bounded by the deadline


async def _start_tool(state: Path, tmp_path: Path) -> tuple[str, int]:
    """A thread whose turn runs a tool command until the test ends it; its pid."""
    tid = new_thread(state, "--cwd", str(tmp_path))
    command = f"echo $$ > {tmp_path / 'tool.pid'}; " + gate_command(tmp_path / "never")
    async with client_for(state) as client:
        await client.send(tid, mock_directive([{"calls": [{"name": "exec_command", "arguments": {"cmd": command, "yield_time_ms": 60000}}]}]))
        await wait_event(client, tid, of_type("tool.started"))
    deadline = time.monotonic() + WAIT_S
    while not (tmp_path / "tool.pid").exists() or not (tmp_path / "tool.pid").read_text().strip():
        assert time.monotonic() < deadline
        time.sleep(0.02)  # the command writes its pid right after it starts
    return tid, int((tmp_path / "tool.pid").read_text())


def _interrupted_by(state: Path, tid: str) -> list[str]:
    """How the thread's turns were interrupted, read from a daemon started again."""
    import json

    serve = Serve(state)
    try:
        events = [json.loads(line) for line in echs(state, "events", tid, "--json").stdout.splitlines()]
    finally:
        serve.terminate()
    return [e["data"]["reason"] for e in events if e["event"] == "turn.interrupted"]


async def test_sighup_stops_the_daemon_gracefully(tmp_path: Path) -> None:
    serve = Serve(tmp_path / "state")
    state = serve.state_dir
    try:
        tid, tool = await _start_tool(state, tmp_path)
        assert serve.process is not None
        serve.process.send_signal(signal.SIGHUP)
        assert serve.process.wait(WAIT_S) == 0
    finally:
        serve.kill()
    log = "".join(serve.lines)
    assert '"signal": "SIGHUP"' in log and "echsd stopped" in log
    _wait_gone(tool)
    assert _interrupted_by(state, tid) == ["shutdown"]


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
async def test_closing_the_daemons_terminal_stops_it_gracefully(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    pidfile = tmp_path / "serve.pid"
    store = store_url_for(state)
    flags = f" --store '{store}'" if store else ""
    script = f"echo $$ > {pidfile}; exec {ECHSD} serve --provider mock --state-dir {state}{flags}"
    terminal = Tmux(tmp_path, ["sh", "-c", script], clean_env(tmp_path, TERM="xterm-256color"))
    try:
        terminal.wait_for("echsd ready")
        daemon = int(pidfile.read_text())
        tid, tool = await _start_tool(state, tmp_path)
    finally:
        terminal.close()  # the pane's terminal goes away: SIGHUP, then EIO on every write
    _wait_gone(daemon)
    _wait_gone(tool)
    assert not (state / "echsd.sock").exists()  # it closed its listeners on the way out
    assert _interrupted_by(state, tid) == ["shutdown"]
