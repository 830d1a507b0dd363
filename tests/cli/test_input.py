"""What ``echs`` refuses before sending (empty, oversize, not UTF-8: usage errors, exit 2),
and how a broken connection is told apart from a closed stdout: the daemon's socket
breaking is a failure (exit 1), only a reader that left stdout is not (exit 0)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from echsd.wire.params import MAX_TEXT_CHARS
from tests.cli.helpers import ECHS, clean_env, echs, new_thread
from tests.helpers import mock_directive


def nothing_delivered(state: Path, tid: str) -> bool:
    history = echs(state, "history", tid, "--json")
    return history.returncode == 0 and history.stdout.strip() == "[]"


def test_empty_and_blank_messages_are_usage_errors(state: Path) -> None:
    tid = new_thread(state)
    for args, stdin in ((("",), None), (("   \n",), None), (("-",), "")):
        result = echs(state, "send", tid, *args, input=stdin)
        assert result.returncode == 2, (args, result.stderr)
        assert "empty" in result.stderr and "Traceback" not in result.stderr
    assert nothing_delivered(state, tid)


def test_oversize_message_is_refused_before_sending_naming_the_limit(state: Path) -> None:
    tid = new_thread(state)
    result = echs(state, "send", tid, "-", input="x" * (MAX_TEXT_CHARS + 1))
    assert result.returncode == 2, result.stderr
    assert f"{MAX_TEXT_CHARS:,}" in result.stderr and f"{MAX_TEXT_CHARS + 1:,}" in result.stderr
    assert result.stdout == ""
    assert nothing_delivered(state, tid)


def test_text_that_is_not_utf8_is_a_clear_usage_error(state: Path) -> None:
    tid = new_thread(state)
    env = clean_env(state.parent)
    base = [ECHS, "--state-dir", str(state), "send", tid]
    piped = subprocess.run([*base, "-"], input=b"bad \xff", capture_output=True, env=env, timeout=30)
    assert piped.returncode == 2, piped.stderr
    assert b"not valid UTF-8" in piped.stderr and b"0xff" in piped.stderr and b"Traceback" not in piped.stderr
    argument = subprocess.run([*base, b"bad \xfe"], capture_output=True, env=env, timeout=30)
    assert argument.returncode == 2, argument.stderr
    assert b"not valid UTF-8" in argument.stderr and b"0xfe" in argument.stderr
    instructions = subprocess.run([ECHS, "--state-dir", str(state), "new", "--instructions", b"\xc3("], capture_output=True, env=env, timeout=30)
    assert instructions.returncode == 2 and b"not valid UTF-8" in instructions.stderr
    assert nothing_delivered(state, tid)


def test_a_socket_that_breaks_while_sending_is_a_failure(small_frames: Path) -> None:
    """A frame over the daemon's limit makes it close the connection mid-send: the broken
    pipe is the daemon's, so echs says so and exits 1 (it used to exit 0, silently)."""
    tid = new_thread(small_frames)
    result = echs(small_frames, "send", tid, "-", input="y" * 1_000_000)  # within MAX_TEXT_CHARS, over the frame limit
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert result.stderr.startswith("echs: ") and "max_message_bytes" in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert nothing_delivered(small_frames, tid)


def test_a_reader_that_leaves_stdout_is_not_a_failure(state: Path) -> None:
    tid = new_thread(state)
    assert echs(state, "send", tid, mock_directive({"repeat": {"chunk": "x", "count": 3000}}), "--wait").returncode == 0
    process = subprocess.Popen(
        [ECHS, "--state-dir", str(state), "events", tid, "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=clean_env(state.parent),
    )
    assert process.stdout is not None and process.stderr is not None
    assert process.stdout.readline().startswith(b"{")
    process.stdout.close()  # like `| head -1`: thousands of lines are still to come
    assert process.wait(30) == 0
    assert process.stderr.read() == b""
