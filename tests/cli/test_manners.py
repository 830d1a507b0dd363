"""How ``echs`` behaves around the edges: a hung daemon is given up on after a stated,
adjustable time; output fits the terminal's width (COLUMNS) and stays whole in pipes."""

from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import Iterator

import pytest

from tests.cli.helpers import clean_env, echs, new_thread


@pytest.fixture
def hung_daemon(tmp_path: Path) -> Iterator[Path]:
    """A state dir whose socket accepts connections and never answers (a stopped daemon)."""
    state = tmp_path / "hung"
    state.mkdir(mode=0o700)
    (state / "token").write_text("t" * 40)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(state / "echsd.sock"))
    listener.listen(16)  # connections wait in the backlog, unanswered
    try:
        yield state
    finally:
        listener.close()


def test_a_hung_daemon_is_given_up_on_after_the_timeout(hung_daemon: Path) -> None:
    for args, env in (
        (("--timeout", "0.5", "status"), {}),
        (("status",), {"ECHS_TIMEOUT": "0.5"}),
        (("--timeout", "0.5", "events", "thr_0123456789abcdef", "--follow"), {}),
    ):
        started = time.monotonic()
        result = echs(hung_daemon, *args, env=clean_env(hung_daemon.parent, **env))
        assert result.returncode == 1, (args, result.stderr)
        assert "did not answer within 0.5 s" in result.stderr and "--timeout" in result.stderr, args
        assert time.monotonic() - started < 5, args


def test_the_default_timeout_is_stated() -> None:
    result = echs(None, "--help", env=clean_env(Path("/nonexistent")))
    assert "--timeout SECONDS" in result.stdout and "default 10 s" in " ".join(result.stdout.split())


def test_ls_and_show_fit_the_width_and_pipes_get_whole_lines(state: Path, tmp_path: Path) -> None:
    deep = tmp_path / ("a-rather-long-directory-name-" * 3) / "project"
    deep.mkdir(parents=True)
    tid = new_thread(state, "--cwd", str(deep), "--instructions", "be thorough " * 40)
    narrow = clean_env(state.parent, COLUMNS="60")
    for args in (("ls",), ("show", tid)):
        lines = echs(state, *args, env=narrow).stdout.splitlines()
        assert lines and max(len(line) for line in lines) <= 60, (args, lines)
    cwd = next(line for line in echs(state, "show", tid, env=narrow).stdout.splitlines() if line.startswith("  cwd"))
    assert cwd.split()[1].startswith("…") and cwd.endswith("/project")  # a cut path keeps its end
    whole = echs(state, "show", tid).stdout
    assert str(deep) in whole or "~" in whole.split("cwd", 1)[1].split("\n", 1)[0]
    assert any(line.startswith(tid) for line in echs(state, "ls", env=narrow).stdout.splitlines())


@pytest.mark.parametrize("program", ["echs", "echsd"])
def test_verb_summaries_are_whole_and_a_mistyped_verb_gets_a_suggestion(program: str) -> None:
    import subprocess

    from tests.cli.helpers import BIN

    env = clean_env(Path("/nonexistent"), COLUMNS="80")
    listing = subprocess.run([str(BIN / program), "--help"], capture_output=True, text=True, env=env, timeout=30).stdout
    commands = listing.split("Commands:", 1)[1].splitlines()
    assert len(commands) > 5 and not [line for line in commands if line.rstrip().endswith("...")]
    typo, meant = ("stat", "status") if program == "echs" else ("serv", "serve")
    wrong = subprocess.run([str(BIN / program), typo], capture_output=True, text=True, env=env, timeout=30)
    assert wrong.returncode == 2 and f"Did you mean '{meant}'?" in wrong.stderr


def test_send_help_says_a_send_during_a_turn_is_queued() -> None:
    text = " ".join(echs(None, "send", "--help", env=clean_env(Path("/nonexistent"))).stdout.split())
    assert "during a turn the input is queued and runs after it" in text
