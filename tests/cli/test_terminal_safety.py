"""Model and tool text never drives the user's terminal: on a terminal (a real pty, a tmux
pane) ``echs send --wait``, ``attach``, ``history``, ``events``, ``approvals`` and ``bb get``
show it with its control sequences neutralised (no clipboard write through OSC 52, no
window title, no bell, no CR/BS overwrite, no CSI, also in their 8-bit forms, no bidi
override); ``--json`` and a pipe carry the exact text."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cli.helpers import ECHS, Tmux, clean_env, client_for, echs, json_lines, new_thread, of_type, run_in_pty, wait_event
from tests.helpers import mock_directive

HOSTILE = (
    "A\x1b]52;c;aGVsbG8=\x07B\x1b]2;PWNED\x07C\x07D\rE\x08F\x1b[2J G \x9b31m H "
    "\x9d0;x\x9c I \u202eJ\x1bPq#0\x1b\\K\x1b(B L"
)
VISIBLE = re.compile(rb"A.*B.*C.*D.*E.*F.* G .* H .* I .*J.*K.* L", re.S)
# What a terminal must never receive from model text: C0 controls but tab and newline
# (ESC, BEL, BS, CR...), C1 controls (UTF-8 \xc2\x80-\x9f) and the bidi overrides.
FORBIDDEN = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]|\xe2\x80[\xaa-\xae]|\xe2\x81[\xa6-\xa9]")
STATUS_REDRAW = b"\r\x1b[K"  # echs's own status line on stderr (NO_COLOR: nothing else of ours)


def hostile_turn() -> str:
    tool = "printf 'out\\033]2;TOOL\\007put\\r\\n\\302\\233' ; echo done"
    return mock_directive([{"calls": [{"name": "exec_command", "arguments": {"cmd": tool}}]}, {"text": HOSTILE}])


def terminal_text(screen: bytes) -> bytes:
    """What reached the terminal, less the pty's own newline translation and our redraws."""
    return screen.replace(STATUS_REDRAW, b"").replace(b"\r\n", b"\n")


def test_send_wait_on_a_terminal_neutralises_and_a_pipe_is_exact(state: Path) -> None:
    tid = new_thread(state)
    command = [ECHS, "--state-dir", str(state), "send", tid, hostile_turn(), "--wait"]
    code, screen, _ = run_in_pty(command, clean_env(state.parent))
    shown = terminal_text(screen)
    assert code == 0, shown
    assert not FORBIDDEN.search(shown), shown
    assert VISIBLE.search(shown)  # the reply, less what would have driven the terminal
    assert b"exec_command" in shown and b"\xe2\x94\x82 out\n" in shown  # tool activity and output (stderr)

    piped = subprocess.run(
        [ECHS, "--state-dir", str(state), "send", tid, mock_directive({"text": HOSTILE}), "--wait"],
        env=clean_env(state.parent), capture_output=True, timeout=30,
    )
    assert piped.returncode == 0 and piped.stdout == HOSTILE.encode() + b"\n"  # exact, byte for byte
    as_json = echs(state, "send", tid, mock_directive({"text": HOSTILE}), "--wait", "--json")
    events = json_lines(as_json.stdout)
    assert "".join(e["data"]["delta"] for e in events if e["event"] == "turn.delta") == HOSTILE


async def test_other_verbs_neutralise_on_a_terminal(state: Path, tmp_path: Path) -> None:
    tid = new_thread(state, "--cwd", str(tmp_path))
    assert echs(state, "send", tid, hostile_turn(), "--wait").returncode == 0
    assert echs(state, "bb", "set", "hostile", json.dumps(HOSTILE)).returncode == 0
    asker = new_thread(state, "--cwd", str(tmp_path), "--approval", "always")
    async with client_for(state) as client:
        await client.send(asker, mock_directive([{"calls": [{"name": "exec_command", "arguments": {"cmd": f"echo '{HOSTILE}'"}}]}]))
        await wait_event(client, asker, of_type("approval.requested"))
        for verb in (["history", tid], ["events", tid], ["approvals"], ["bb", "get", "hostile"], ["show", tid]):
            code, screen, _ = run_in_pty([ECHS, "--state-dir", str(state), *verb], clean_env(state.parent))
            shown = terminal_text(screen)
            assert code == 0 and not FORBIDDEN.search(shown), (verb, shown)
        await client.interrupt(asker)
    assert json.loads(echs(state, "bb", "get", "hostile").stdout) == HOSTILE  # a pipe: exact


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_no_title_or_clipboard_change_in_a_real_terminal(state: Path, tmp_path: Path) -> None:
    """tmux applies what reaches it: a window title (OSC 2) renames the pane, and with
    ``set-clipboard on`` an OSC 52 write becomes a paste buffer."""
    tid = new_thread(state)
    for name, command in (
        ("send", [ECHS, "--state-dir", str(state), "send", tid, hostile_turn(), "--wait"]),
        ("attach", [ECHS, "--state-dir", str(state), "attach", tid]),
    ):
        directory = tmp_path / name
        directory.mkdir()
        terminal = Tmux(directory, command, clean_env(state.parent, TERM="xterm-256color"))
        try:
            terminal._run("set-option", "-g", "set-clipboard", "on")
            before = terminal._run("display-message", "-p", "#{pane_title}")
            terminal.wait_for("EXITED 0" if name == "send" else "idle ›")
            if name == "attach":
                screen = terminal.wait_for("✓ turn completed")  # the replay shows the hostile turn
                assert "A" in screen
            assert terminal._run("display-message", "-p", "#{pane_title}") == before
            assert "PWNED" not in before and "TOOL" not in before
            assert terminal._run("list-buffers") == ""
        finally:
            terminal.close()
