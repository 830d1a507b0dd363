"""``echs send --wait`` says what the turn is doing: which approval it waits for and how to
answer it (also when stderr is not a terminal, and answering that way works), and on a
terminal the tool output as it comes and the elapsed time, as ``echs attach`` shows them."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import trio

from tests.cli.helpers import ECHS, WAIT_S, Tmux, clean_env, echs, gate_command, new_thread
from tests.helpers import mock_directive


async def test_the_approval_it_waits_for_and_how_to_answer_it(state: Path, tmp_path: Path) -> None:
    tid = new_thread(state, "--cwd", str(tmp_path), "--approval", "always")
    turn = mock_directive([{"calls": [{"name": "exec_command", "arguments": {"cmd": "touch approved"}}]}, {"text": "made it"}])
    command = [ECHS, "--state-dir", str(state), "send", tid, turn, "--wait"]
    process = await trio.lowlevel.open_process(command, env=clean_env(state.parent), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    err = b""
    with trio.fail_after(WAIT_S):
        while not (asked := re.search(rb"answer with `(echs approve apr_[0-9a-f]{16})`", err)):
            err += await process.stderr.receive_some(4096)
        assert b"waiting for approval of exec_command: touch approved" in err
        answer = echs(state, *asked.group(1).decode().split()[1:])  # the command it suggests
        assert answer.returncode == 0, answer.stderr
        out = b""
        while chunk := await process.stdout.receive_some(65536):
            out += chunk
        while chunk := await process.stderr.receive_some(65536):
            err += chunk
        assert await process.wait() == 0, err
    assert out == b"made it\n" and b"approved: apr_" in err
    assert (tmp_path / "approved").exists()


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_tool_output_and_elapsed_time_on_a_terminal(state: Path, tmp_path: Path) -> None:
    tid = new_thread(state, "--cwd", str(tmp_path))
    gate = tmp_path / "gate"
    work = f"for i in 1 2 3; do echo step-$i; done; {gate_command(gate)}"
    turn = mock_directive([{"calls": [{"name": "exec_command", "arguments": {"cmd": work, "yield_time_ms": 30000}}]}, {"text": "all steps done"}])
    terminal = Tmux(tmp_path, [ECHS, "--state-dir", str(state), "send", tid, turn, "--wait"], clean_env(state.parent, TERM="xterm-256color"))
    try:
        screen = terminal.wait_for(lambda s: "│ step-3" in s and re.search(r"running [1-9]\d*s", s) is not None)
        assert "⚙ exec_command" in screen and "│ step-1" in screen and "│ step-2" in screen
        gate.touch()
        screen = terminal.wait_for("EXITED 0", timeout=WAIT_S)
        assert "✓ exec_command" in screen and "all steps done" in screen
        assert "running" not in screen.split("all steps done")[1]  # the status line is gone at the end
    finally:
        terminal.close()
