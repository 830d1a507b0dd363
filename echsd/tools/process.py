"""Spawn tool commands inside an enclosure, with pipes or a pty, and never leave them behind.

``ToolProcesses`` is the daemon's table of live enclosures: the mechanism detected at start
(``containment.py``, ``containment_probe.py``), the on-disk registry (``groups.py``), the
set that shutdown kills, and the reaper of the orphans killed commands leave us.
``ContainedProcess`` is one command: spawned in its own session inside its enclosure, read
as bytes from a pipe (stdout and stderr together, stdin from /dev/null) or from a pty
master (the slave is its controlling terminal, so Ctrl-C and /dev/tty work), and finished
by ``release``, which kills whatever is left of the enclosure and waits until it is empty.

The daemon calls ``use_group_registry`` at start (detects the mechanism, kills what a
crashed run left), ``kill_all_groups`` at shutdown, and shows ``containment_name()``.
"""

from __future__ import annotations

import errno
import fcntl
import functools
import os
import shutil
import struct
import subprocess
import termios
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

import trio

from echsd.logs import get_logger
from echsd.tools import procfs
from echsd.tools.containment import Containment, Enclosure
from echsd.tools.containment_probe import detect_containment
from echsd.tools.groups import GroupRegistry

log = get_logger(__name__)

READ_CHUNK = 65536
PTY_ROWS, PTY_COLUMNS = 24, 80  # Codex's pty size
SECRET_ENV = ("OPENAI_API_KEY", "ECHS_TOKEN")
RECENT_LEADERS = 256  # process groups whose orphans are still recognised as ours
# What Codex sets for its exec sessions: no colours, no pagers, a terminal nobody drives.
COMMAND_ENV = {"NO_COLOR": "1", "TERM": "dumb", "COLORTERM": "", "PAGER": "cat", "GIT_PAGER": "cat", "GH_PAGER": "cat"}


@dataclass
class ToolProcesses:
    containment: Containment
    registry: GroupRegistry | None = None
    live: dict[int, Enclosure] = field(default_factory=dict)
    recent: deque[int] = field(default_factory=lambda: deque(maxlen=RECENT_LEADERS))

    async def spawn(self, argv: list[str], *, cwd: str, env: Mapping[str, str], tty: bool) -> "ContainedProcess":
        """Start ``argv`` in a new enclosure. OSError when it cannot be started."""
        master = slave = None
        if tty:
            master, slave = os.openpty()
            fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", PTY_ROWS, PTY_COLUMNS, 0, 0))
        prepared = self.containment.prepare(argv, os.ttyname(slave) if slave is not None else None)
        try:
            process = await trio.lowlevel.open_process(
                prepared.argv,
                cwd=cwd,
                env=dict(env),
                stdin=slave if slave is not None else subprocess.DEVNULL,
                stdout=slave if slave is not None else subprocess.PIPE,
                stderr=slave if slave is not None else subprocess.STDOUT,
                start_new_session=True,
            )
        except BaseException:
            prepared.abandon()
            if master is not None:
                os.close(master)
            raise
        finally:
            if slave is not None:
                os.close(slave)
        enclosure = prepared.enclose(process.pid)
        self.live[process.pid] = enclosure
        if self.registry is not None:
            self.registry.add(enclosure)
        if master is not None:
            stream = trio.lowlevel.FdStream(master)
            return ContainedProcess(self, process, enclosure, stream, stream)
        assert process.stdout is not None
        return ContainedProcess(self, process, enclosure, process.stdout, None)

    def forget(self, enclosure: Enclosure) -> None:
        self.live.pop(enclosure.leader, None)
        self.recent.append(enclosure.leader)
        if self.registry is not None:
            self.registry.remove(enclosure)
        self.reap_orphans()

    def reap_orphans(self) -> None:
        """Reap the zombies of killed commands that were reparented to us. A process is
        reparented when its parent exits, which can be after its enclosure looked empty,
        so each release also reaps what earlier ones could not yet see."""

        def ours(pid: int, stat: procfs.ProcStat) -> bool:
            if pid in self.live:
                return False  # a leader: trio reaps it
            if stat.pgrp in self.live or stat.pgrp in self.recent:
                return True
            cgroup_id = procfs.cgroup_of(pid)
            return cgroup_id is not None and self.containment.holds(cgroup_id)

        procfs.reap_zombies(ours)

    def kill_all(self) -> None:
        """Shutdown safety net: SIGKILL every enclosure still alive (the tasks that own
        them empty and unregister them as they are cancelled)."""
        for enclosure in list(self.live.values()):
            enclosure.kill()


class ContainedProcess:
    """One running command. Reading and waiting may run in different tasks; ``release``
    must be called once, whatever happened (it is shielded from cancellation)."""

    def __init__(
        self,
        table: ToolProcesses,
        process: trio.Process,
        enclosure: Enclosure,
        output: trio.abc.ReceiveStream,
        stdin: trio.abc.SendStream | None,
    ) -> None:
        self.table = table
        self.process = process
        self.enclosure = enclosure
        self.output = output
        self.stdin = stdin
        self.pid = process.pid

    @property
    def tty(self) -> bool:
        return self.stdin is not None

    async def read(self) -> bytes:
        """The next chunk of output; b"" once every writer is gone (a pty says EIO)."""
        try:
            return await self.output.receive_some(READ_CHUNK)
        except trio.BrokenResourceError as exc:
            if isinstance(exc.__cause__, OSError) and exc.__cause__.errno == errno.EIO:
                return b""
            raise
        except trio.ClosedResourceError:
            return b""

    async def write(self, data: bytes) -> None:
        """Write to the pty; raises BrokenResourceError once the command is gone."""
        if self.stdin is None:
            raise trio.ClosedResourceError("this command's stdin is /dev/null (started without a tty)")
        await self.stdin.send_all(data)

    async def wait(self) -> int:
        return await self.process.wait()

    def kill(self) -> None:
        self.enclosure.kill()

    async def release(self) -> int:
        """Kill what is left of the enclosure, reap the leader, wait until the enclosure is
        empty, close the streams and unregister. Returns the leader's exit status."""
        with trio.CancelScope(shield=True):
            self.enclosure.kill()
            code = await self.process.wait()
            await self.enclosure.wait_gone()
            await self.output.aclose()
            self.table.forget(self.enclosure)
        return code


_table: ToolProcesses | None = None


def tool_processes() -> ToolProcesses:
    """The daemon's table (set up by ``use_group_registry``; detected on first use
    without a registry where nothing set it up, as in unit tests)."""
    global _table
    if _table is None:
        _table = ToolProcesses(detect_containment())
    return _table


def use_group_registry(directory: Path) -> int:
    """At daemon start: detect the containment mechanism (once per process), record live
    enclosures under ``directory`` from now on, and first kill what a crashed run left.
    Returns the number of leftover enclosures killed."""
    global _table
    containment = _table.containment if _table is not None else detect_containment()
    registry = GroupRegistry(directory)
    _table = ToolProcesses(containment, registry)
    return registry.kill_leftovers()


def containment_name() -> str:
    """``cgroup``, ``pidns`` or ``process-group``: for ``echs status``."""
    return tool_processes().containment.name


def kill_all_groups() -> None:
    """Shutdown safety net: kill every enclosure a tool started that is still alive."""
    if _table is not None:
        _table.kill_all()
        _table.containment.close()


def become_subreaper() -> bool:
    """Adopt orphaned descendants (Linux), so processes a tool left behind are ours to reap
    even where PID 1 never reaps (containers). Returns whether it took effect."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_CHILD_SUBREAPER = 36
        return bool(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


@functools.cache
def default_shell() -> str:
    """bash where there is one (looked up once: a PATH search costs ~1 ms per command)."""
    return shutil.which("bash") or "/bin/sh"


def shell_argv(command: str, *, shell: str | None = None, login: bool = False) -> list[str]:
    return [shell or default_shell(), "-lc" if login else "-c", command]


def command_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The daemon's environment minus our secrets, with pagers and colours off."""
    env = {k: v for k, v in os.environ.items() if k not in SECRET_ENV}
    env.update(COMMAND_ENV)
    if extra:
        env.update(extra)
    return env
