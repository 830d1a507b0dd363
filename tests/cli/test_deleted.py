"""A deleted thread ends whoever follows it: ``echs events --follow`` prints the
``thread.deleted`` line (or event, with ``--json``) and exits 0, ``echs attach`` says the
thread was deleted and detaches, instead of waiting for ever."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import trio

from tests.cli.helpers import ECHS, WAIT_S, Tmux, clean_env, echs, json_lines, new_thread


async def _follow_until_deleted(state: Path, *flags: str) -> tuple[int, bytes, bytes]:
    """Follow a parent thread, delete it (with its child) from another ``echs``: the
    follower's exit code and output."""
    parent = new_thread(state)
    child = new_thread(state, "--parent", parent)
    assert echs(state, "send", parent, "hello", "--wait").returncode == 0
    command = [ECHS, "--state-dir", str(state), "events", child, "--follow", *flags]
    process = await trio.lowlevel.open_process(command, env=clean_env(state.parent), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    out = b""
    with trio.fail_after(WAIT_S):
        while b"thread.created" not in out:  # the replay is out: the follower is live
            out += await process.stdout.receive_some(65536)
        removed = echs(state, "rm", parent[:12])
        assert removed.returncode == 0, removed.stderr
        while chunk := await process.stdout.receive_some(65536):
            out += chunk
        code = await process.wait()
        err = await process.stderr.receive_some(65536)
    return code, out, err


async def test_events_follow_ends_with_the_deletion(state: Path) -> None:
    code, out, err = await _follow_until_deleted(state)
    assert code == 0, err
    last = out.decode().splitlines()[-1]
    assert "thread.deleted" in last and "thread deleted with its ancestor thr_" in last


async def test_events_follow_json_ends_with_the_deleted_event(state: Path) -> None:
    code, out, err = await _follow_until_deleted(state, "--json")
    assert code == 0, err
    events = json_lines(out)
    assert events[-1]["event"] == "thread.deleted"
    assert events[-1]["seq"] == events[-2]["seq"] + 1 and events[-1]["data"]["root"] != events[-1]["thread_id"]


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_attach_says_the_thread_was_deleted(state: Path, tmp_path: Path) -> None:
    tid = new_thread(state)
    terminal = Tmux(tmp_path, [ECHS, "--state-dir", str(state), "attach", tid], clean_env(state.parent, TERM="xterm-256color"))
    try:
        terminal.wait_for("idle ›")
        assert echs(state, "rm", tid).returncode == 0
        screen = terminal.wait_for("EXITED 0")
        assert "── thread deleted ──" in screen and f"detached: {tid} was deleted" in screen
        assert "keeps running" not in screen
    finally:
        terminal.close()
