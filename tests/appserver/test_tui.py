"""End to end: the real Codex TUI (``codex --remote``) in a terminal (tmux) against
``echsd serve --app-server`` on the mock model, driven by send-keys and read with
capture-pane: a streamed reply, a tool call, Esc, a steer, a background terminal, a
sub-agent, an approval, quit and resume; and a TUI quit at once leaves no thread behind.
Skipped unless the Codex CLI is installed; ``make interop`` installs it
(``bin/install-codex-cli``) and runs this. What happened on the thread is checked through
``echs`` as well as on the screen."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Iterator

import pytest

from tests.cli.helpers import Serve, Tmux, clean_env, echs, free_port, gate_command, json_lines
from tests.helpers import mock_directive

CODEX_VERSION = "0.169.0"  # the version this was measured against (bin/install-codex-cli)


def codex_binary() -> str | None:
    """``$ECHS_CODEX_BIN``, else the CLI ``bin/install-codex-cli`` installed, else ``codex`` on PATH."""
    if os.environ.get("ECHS_CODEX_BIN"):
        return os.environ["ECHS_CODEX_BIN"]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    installed = cache / "echsd" / f"codex-cli-{CODEX_VERSION}" / "node_modules" / ".bin" / "codex"
    return str(installed) if installed.exists() else shutil.which("codex")


CODEX = codex_binary()
pytestmark = [
    pytest.mark.interop,
    pytest.mark.skipif(CODEX is None, reason="the Codex CLI is not installed (make interop installs it)"),
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
    pytest.mark.timeout(300),
]


def unseen(step: dict) -> str:
    """A mock directive whose reply text reaches the screen only from the reply: the typed
    message spells every ``z`` as a JSON escape (the replies here are all about zetas)."""
    return "mock: " + json.dumps(step).replace("z", "\\u007a")


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[tuple[Serve, int]]:
    port = free_port()
    serve = Serve(tmp_path / "state", "--app-server", f"ws://127.0.0.1:{port}")
    yield serve, port
    try:
        serve.terminate()
    finally:
        serve.kill()


class Tui:
    """``codex --remote`` in its own tmux server, with an empty CODEX_HOME."""

    def __init__(self, tmp_path: Path, serve: Serve, port: int, *args: str) -> None:
        directory = tmp_path / f"tui-{len(list(tmp_path.glob('tui-*')))}"
        directory.mkdir()
        token = (serve.state_dir / "token").read_text().strip()
        env = clean_env(tmp_path, TERM="xterm-256color", CODEX_HOME=str(tmp_path / "codex-home"), ECHS_TOKEN_FOR_TUI=token)
        (tmp_path / "codex-home").mkdir(exist_ok=True)
        command = [str(CODEX), "--remote", f"ws://127.0.0.1:{port}", "--remote-auth-token-env", "ECHS_TOKEN_FOR_TUI"]
        command += ["-c", "check_for_update_on_startup=false", *args]
        self.term = Tmux(directory, command, env, width=140, height=50)

    def submit(self, text: str) -> None:
        """Type a line and, once the composer shows it, press Enter."""
        self.term.type(text)
        tail = "".join(text.split())[-24:]  # the composer wraps long lines
        self.term.wait_for(lambda screen: tail in "".join(screen.split()))
        self.term.keys("Enter")


def listed(serve: Serve) -> set[str]:
    result = echs(serve.state_dir, "ls", "--json", env=serve.env)
    assert result.returncode == 0, result.stderr
    return {thread["thread_id"] for thread in json.loads(result.stdout)}


def thread_events(serve: Serve, thread_id: str) -> list[dict]:
    result = echs(serve.state_dir, "events", thread_id, "--json", env=serve.env)
    assert result.returncode == 0, result.stderr
    return json_lines(result.stdout)


def test_a_conversation_in_the_codex_tui(daemon: tuple[Serve, int], tmp_path: Path) -> None:
    serve, port = daemon
    version = subprocess.run([str(CODEX), "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    tui = Tui(tmp_path, serve, port)
    screen = tui.term.wait_for(lambda s: "thr_" in s and "Ask Codex" in s, timeout=60)
    thread_id = next(word for word in screen.split() if word.startswith("thr_"))
    try:
        # A reply streams: part of it is on screen before the rest has arrived.
        tui.submit(unseen({"text": " ".join(f"zeta{i}" for i in range(40)), "delay_ms": 60}))
        partial = tui.term.wait_for(lambda s: "zeta3 " in s)
        assert "zeta39" not in partial
        tui.term.wait_for(lambda s: "zeta39" in s and "Worked for" in s)

        # A scripted tool call shows its command and its output.
        call = {"name": "exec_command", "arguments": {"cmd": "echo tui-tool-output"}}
        tui.submit(mock_directive([{"text": "Running it.", "calls": [call]}, {"text": "Tool done."}]))
        shown = tui.term.wait_for("• Tool done.")  # the reply, not the typed directive
        assert "Ran echo tui-tool-output" in shown and "└ tui-tool-output" in shown

        # Esc interrupts a long reply.
        endless = {"repeat": {"chunk": "zeta ", "count": 600}, "delay_ms": 50}  # 30 s of reply
        tui.submit(unseen(endless))
        tui.term.wait_for("zeta zeta zeta")
        tui.term.keys("Escape")
        tui.term.wait_for("Conversation interrupted")
        assert [e["data"]["reason"] for e in thread_events(serve, thread_id) if e["event"] == "turn.interrupted"] == ["interrupt"]

        # A line typed during a turn steers it: no new turn, and the turn answers it.
        gate = tmp_path / "gate"
        tui.submit(mock_directive([{"calls": [{"name": "exec_command", "arguments": {"cmd": gate_command(gate)}}]}]))
        tui.term.wait_for("Running for i in")  # the gated command runs: the turn is on
        turns_before = sum(e["event"] == "turn.started" for e in thread_events(serve, thread_id))
        tui.submit("steer-line")
        tui.term.wait_for("↳ steer-line")  # the TUI holds it as a steer of the running turn
        gate.touch()
        tui.term.wait_for("mock reply to: steer-line")
        events = thread_events(serve, thread_id)
        assert sum(e["event"] == "turn.started" for e in events) == turns_before
        assert [e["data"]["mode"] for e in events if e["event"] == "input.delivered"][-1] == "steer"

        # A command left running is a background terminal until a write_stdin sees it end.
        gate = tmp_path / "gate-2"
        started = {"name": "exec_command", "arguments": {"cmd": gate_command(gate), "yield_time_ms": 500}}
        tui.submit(unseen({"steps": [{"calls": [started]}, {"text": "zeta left running"}]}))
        tui.term.wait_for(lambda s: "1 background terminal running" in s and "zeta left running" in s)
        session = next(e["data"]["session_id"] for e in thread_events(serve, thread_id) if e["data"].get("session_id"))
        gate.touch()
        poll = {"name": "write_stdin", "arguments": {"session_id": session, "chars": "", "yield_time_ms": 10000}}
        tui.submit(unseen({"steps": [{"calls": [poll]}, {"text": "zeta has ended"}]}))
        shown = tui.term.wait_for("zeta has ended")
        assert "└ gate-open" in shown and "background terminal running" not in shown

        # A sub-agent: its spawn, the wait and its answer are on screen.
        spawn = {"name": "spawn_agent", "arguments": {"message": "zeta-task", "agent_type": "explorer"}}
        wait = {"name": "wait_agents", "arguments": {"timeout_ms": 30000}}
        tui.submit(unseen({"steps": [{"calls": [spawn]}, {"calls": [wait]}, {"text": "zeta agents done"}]}))
        shown = tui.term.wait_for("zeta agents done")
        assert "Spawned" in shown and "Finished waiting" in shown and "mock reply to: zeta-task" in shown

        # An approval: the TUI asks, "y" lets the command run.
        assert echs(serve.state_dir, "config", thread_id, "approval=on-write", env=serve.env).returncode == 0
        tui.term.wait_for("Ask Codex")
        tui.submit(mock_directive([{"calls": [{"name": "exec_command", "arguments": {"cmd": "echo approved-run"}}]}, {"text": "Approved."}]))
        tui.term.wait_for("Would you like to run the following command?")
        tui.term.keys("y")
        shown = tui.term.wait_for("• Approved.")
        assert "└ approved-run" in shown

        # Quit, then `resume thr_...` shows the history.
        tui.term.wait_for("Ask Codex")
        tui.submit("/quit")
        tui.term.wait_for("EXITED 0")
    finally:
        tui.term.close()
    again = Tui(tmp_path, serve, port, "resume", thread_id)
    try:
        # The TUI asks for a page of the newest turns: the approval, the sub-agent and the
        # background terminal, whose output arrived after its turn had ended.
        history = again.term.wait_for(lambda s: "• Approved." in s and "Ask Codex" in s, timeout=60)
        assert "└ approved-run" in history and "zeta agents done" in history and "└ gate-open" in history, version
        again.submit("after resume")
        again.term.wait_for("mock reply to: after resume")
    finally:
        again.term.close()

    # A TUI opened and quit without a word leaves no thread behind.
    def started(screen: str) -> list[str]:
        return [word for word in screen.split() if word.startswith("thr_") and word != thread_id]

    idle = Tui(tmp_path, serve, port)
    try:
        unused = started(idle.term.wait_for(lambda s: "Ask Codex" in s and bool(started(s)), timeout=60))[0]
        assert unused in listed(serve)
        idle.submit("/quit")
        idle.term.wait_for("EXITED 0")
    finally:
        idle.term.close()
    deadline = time.monotonic() + 15
    while unused in listed(serve):  # the daemon tells nobody when it deletes a thread
        assert time.monotonic() < deadline, f"{unused} is still there"
        time.sleep(0.1)
    assert thread_id in listed(serve)
