"""A thread deleted on any node ends whoever follows it on every node (``echs events
--follow``, ``echs attach``; two real daemons over one throwaway PostgreSQL):
``thread.deleted`` is never stored (its log goes with the thread), so the node that ran the
thread notifies the others of it whole, and their relays hand it to their subscribers after
the thread's last relayed event."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.cli.helpers import ECHS, WAIT_S, Tmux, clean_env, client_for, echs, json_lines, new_thread
from tests.cluster.conftest import Nodes


class Follower:
    """``echs events ID --follow --json`` through one node, as a child of the test."""

    def __init__(self, state: Path, thread_id: str) -> None:
        self.state, self.thread_id = state, thread_id
        self.out = b""

    async def start(self) -> None:
        command = [ECHS, "--state-dir", str(self.state), "events", self.thread_id, "--follow", "--json"]
        env = clean_env(self.state.parent)
        self.process = await trio.lowlevel.open_process(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert self.process.stdout is not None
        while b'"thread.created"' not in self.out:  # the replay is out: the subscription is live
            chunk = await self.process.stdout.receive_some(65536)
            assert chunk, "echs events --follow ended before its replay"
            self.out += chunk

    def kill(self) -> None:
        """A follower that never ended (the test failed) goes with the test."""
        process = getattr(self, "process", None)
        if process is not None and process.returncode is None:
            process.kill()

    async def until_exit(self) -> tuple[int, list[dict[str, Any]], bytes]:
        """Its exit code, events and stderr, once it ended on its own."""
        assert self.process.stdout is not None and self.process.stderr is not None
        while chunk := await self.process.stdout.receive_some(65536):
            self.out += chunk
        code = await self.process.wait()
        return code, json_lines(self.out), await self.process.stderr.receive_some(65536)


@pytest.mark.parametrize("through", ["node-a", "node-b"])
async def test_followers_on_every_node_hear_of_a_deletion(nodes: Nodes, through: str) -> None:
    a = nodes.start("node-a")
    b = nodes.start("node-b")
    parent = new_thread(a.state_dir)  # run by node-a
    async with client_for(a.state_dir) as on_a:
        child = (await on_a.request("thread.create", {"parent": parent, "node": "node-b"}))["thread_id"]  # run by node-b
    assert echs(b.state_dir, "send", parent, "hello", "--wait").returncode == 0

    followers = [Follower(b.state_dir, parent), Follower(a.state_dir, child)]  # each on the node that does not run it
    try:
        with trio.fail_after(WAIT_S * 2):
            for follower in followers:
                await follower.start()
            removed = echs(nodes.state_dir(through), "rm", parent[:12])
            assert removed.returncode == 0, removed.stderr
            ended = [await follower.until_exit() for follower in followers]
    finally:
        for follower in followers:
            follower.kill()

    for follower, (code, events, err) in zip(followers, ended):
        assert code == 0, err
        last = events[-1]
        assert last["event"] == "thread.deleted" and last["thread_id"] == follower.thread_id
        assert last["data"]["root"] == parent and last["seq"] == events[-2]["seq"] + 1
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1))


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_attach_through_another_node_says_the_thread_was_deleted(nodes: Nodes, tmp_path: Path) -> None:
    a = nodes.start("node-a")
    b = nodes.start("node-b")
    tid = new_thread(a.state_dir)  # run by node-a, attached through node-b, deleted through node-a
    command = [ECHS, "--state-dir", str(b.state_dir), "attach", tid]
    terminal = Tmux(tmp_path, command, clean_env(b.state_dir.parent, TERM="xterm-256color"))
    try:
        terminal.wait_for("idle ›")
        assert echs(a.state_dir, "rm", tid).returncode == 0
        screen = terminal.wait_for("EXITED 0")
        assert "── thread deleted ──" in screen and f"detached: {tid} was deleted" in screen
        assert "keeps running" not in screen
    finally:
        terminal.close()
