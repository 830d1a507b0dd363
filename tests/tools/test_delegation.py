"""``echsd serve`` as an unprivileged user in a delegated cgroup (what systemd's
``Delegate=yes`` hands the shipped unit): a tool command can write its pid into any
``cgroup.procs`` of the tree and ``setsid`` away, and must still not outlive its command,
its turn or the daemon. The tree is set up as systemd does it (the directory and its
``cgroup.procs``, ``cgroup.threads``, ``cgroup.subtree_control`` chowned to the user), by
root; without root, or without a writable cgroup2 mount, the test skips saying which."""

from __future__ import annotations

import json
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any, Iterator

import pytest
import trio

from tests.cli.helpers import ECHS, ECHSD, WAIT_S, clean_env
from tests.helpers import mock_directive
from tests.tools.exec_helpers import alive, escaped, marker, wait_until

USER = "nobody"
DELEGATED_FILES = ("cgroup.procs", "cgroup.threads", "cgroup.subtree_control")


def cgroup2_mount() -> Path | None:
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        before, _, after = line.partition(" - ")
        if after.startswith("cgroup2 "):
            return Path(before.split()[4])
    return None


def delegation_unavailable() -> str | None:
    """Why a delegated cgroup cannot be set up here, or None."""
    if os.geteuid() != 0:
        return "setting up a delegated cgroup for another user needs root (systemd does it for the unit)"
    mount = cgroup2_mount()
    if mount is None:
        return "no cgroup2 filesystem is mounted"
    if not os.access(mount, os.W_OK):
        return f"the cgroup2 mount {mount} is read-only here"
    if shutil.which("setpriv") is None:
        return "setpriv (util-linux) is missing: cannot start the daemon as another user"
    try:
        pwd.getpwnam(USER)
    except KeyError:
        return f"there is no user {USER!r} to run the daemon as"
    return None


class DelegatedDaemon:
    """``echsd serve --provider mock`` as ``nobody``, started inside a cgroup delegated to it."""

    def __init__(self, root: Path) -> None:
        user = pwd.getpwnam(USER)
        mount = cgroup2_mount()
        assert mount is not None
        own = Path("/proc/self/cgroup").read_text().split("0::", 1)[1].splitlines()[0].strip("/")
        self.tree = mount / own / f"echsd-delegated-{secrets.token_hex(4)}"
        self.tree.mkdir()
        for path in (self.tree, *(self.tree / name for name in DELEGATED_FILES)):
            os.chown(path, user.pw_uid, user.pw_gid)
        self.state = root / "state"
        self.work = root / "work"
        for path in (root / "home", self.state, self.work):
            path.mkdir(mode=0o700)
            os.chown(path, user.pw_uid, user.pw_gid)
        env = clean_env(root / "home")
        enter = 'echo $$ > "$1" && shift && exec "$@"'  # into the delegated cgroup, then drop to the user
        command = ["/bin/sh", "-c", enter, "enter", str(self.tree / "cgroup.procs"), "setpriv", f"--reuid={user.pw_uid}",
                   f"--regid={user.pw_gid}", "--clear-groups", ECHSD, "serve", "--provider", "mock", "--state-dir", str(self.state)]
        self.lines: list[str] = []
        self.process = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        ready = threading.Event()

        def drain() -> None:
            assert self.process.stderr is not None
            for line in self.process.stderr:
                self.lines.append(line)
                if "echsd ready" in line:
                    ready.set()

        threading.Thread(target=drain, daemon=True).start()
        if not ready.wait(WAIT_S):
            self.process.kill()
            raise AssertionError("echsd serve did not start:\n" + "".join(self.lines))

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(WAIT_S)

    def remove(self) -> None:
        """Kill whatever is left in the tree (a failed test), then remove it."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(WAIT_S)
        (self.tree / "cgroup.kill").write_text("1")
        for directory, _subdirs, _files in sorted(os.walk(self.tree), key=lambda entry: -len(entry[0])):
            try:
                Path(directory).rmdir()
            except OSError:
                pass


@pytest.fixture
def delegated() -> Iterator[DelegatedDaemon]:
    reason = delegation_unavailable()
    if reason:
        pytest.skip(reason)
    root = Path(tempfile.mkdtemp(prefix="echsd-delegated-"))  # not under root's 0700 pytest dir
    root.chmod(0o755)
    daemon = DelegatedDaemon(root)
    try:
        yield daemon
    finally:
        daemon.remove()
        shutil.rmtree(root, ignore_errors=True)


# Shell code run by the tool command: its cgroup, and the places in the tree it can move to.
WHERE = 'me=%s$(sed -n "s/^0:://p" /proc/self/cgroup); mine=${me%%/*}; tree=${mine%%/*}'
TARGETS = {
    "the delegated root": "$tree",
    "the daemon's directory": "$mine",
    "the daemon's own cgroup": "$mine/daemon",
    "a cgroup of its own": "$tree/escape-$$",
}


def escape(target: str, mount: Path, then: str = "true") -> tuple[str, str]:
    """A command that moves itself to ``target`` (a key of TARGETS), starts a setsid'd
    ``sleep`` there, then runs ``then``; with the sleep's marker."""
    m = marker()
    place = TARGETS[target]
    make = f"mkdir -p {place} && " if "escape-" in place else ""
    return f"{WHERE % mount}; {make}echo $$ > {place}/cgroup.procs && setsid -f sleep {m}; {then}", m


async def run_turn(client: Any, cwd: Path, command: str, *, wait_for_end: bool = True, sandbox: str = "full-access") -> str:
    """A turn running ``command``; unsandboxed by default: what is tested here is the
    containment (the sandbox would refuse the move to begin with, see the last test)."""
    thread = (await client.request("thread.create", {"cwd": str(cwd), "sandbox": sandbox}))["thread_id"]
    call = {"name": "exec_command", "arguments": {"cmd": command, "yield_time_ms": 2000}}
    await client.request("thread.send", {"thread_id": thread, "text": mock_directive([{"calls": [call]}, {"text": "done"}])})
    if wait_for_end:
        with trio.fail_after(WAIT_S):
            async with client.events(thread, since=0) as stream:
                async for event in stream:
                    if event["event"] in ("turn.completed", "turn.error", "turn.interrupted"):
                        assert event["event"] == "turn.completed", event
                        break
    return str(thread)


@pytest.mark.parametrize("target", list(TARGETS))
async def test_a_command_that_moves_itself_dies_with_its_command(delegated: DelegatedDaemon, target: str) -> None:
    from echsd.wire.client import connect

    mount = cgroup2_mount()
    assert mount is not None
    command, m = escape(target, mount)
    async with connect(state_dir=delegated.state) as client:
        await run_turn(client, delegated.work, command)
        await wait_until(lambda: not alive([m]), timeout=5)
    assert delegated.stop() == 0


@pytest.mark.parametrize("trigger", ["interrupt", "kill", "SIGTERM"])
async def test_an_escape_from_a_running_command_dies_with_its_turn(delegated: DelegatedDaemon, trigger: str) -> None:
    from echsd.wire.client import connect

    mount = cgroup2_mount()
    assert mount is not None
    command, m = escape("the delegated root", mount, then="sleep 300")
    async with connect(state_dir=delegated.state) as client:
        thread = await run_turn(client, delegated.work, command, wait_for_end=False)
        await wait_until(lambda: escaped([m]))
        if trigger != "SIGTERM":
            await client.request(f"thread.{trigger}", {"thread_id": thread})
            await wait_until(lambda: not alive([m]), timeout=5)
    assert delegated.stop() == 0
    assert not alive([m])
    leftovers = [pid for directory, _, _ in os.walk(delegated.tree) for pid in (Path(directory) / "cgroup.procs").read_text().split()]
    assert leftovers == []


def test_the_daemon_lives_in_a_cgroup_of_its_own(delegated: DelegatedDaemon) -> None:
    status = json.loads(subprocess.run([ECHS, "--state-dir", str(delegated.state), "status", "--json"],
                                       capture_output=True, text=True, env=clean_env(delegated.state.parent / "home"), check=True).stdout)
    assert status["containment"] == "cgroup"
    daemon_cgroup = Path(f"/proc/{delegated.process.pid}/cgroup").read_text()
    assert daemon_cgroup.rstrip().endswith("/daemon"), daemon_cgroup
    assert (delegated.tree / "cgroup.procs").read_text() == ""


async def test_a_sandboxed_command_cannot_move_itself_at_all(delegated: DelegatedDaemon) -> None:
    """Under workspace-write the cgroup files are outside the writable roots: Landlock
    refuses the write, so the command never leaves its cgroup."""
    from echsd.wire.client import connect

    mount = cgroup2_mount()
    assert mount is not None
    command, m = escape("the delegated root", mount, then="sleep 300")
    async with connect(state_dir=delegated.state) as client:
        thread = await run_turn(client, delegated.work, command, sandbox="workspace-write")
        history = await client.request("thread.history", {"thread_id": thread})
    output = next(item["output"] for item in history if item["type"] == "function_call_output")
    assert "Permission denied" in output and not alive([m])
    assert delegated.stop() == 0
