"""Spawn tool commands inside an enclosure, with pipes or a pty, and never leave them behind.

``ToolProcesses`` is the daemon's table of live enclosures: the mechanism detected at start
(``containment.py``, ``containment_probe.py``), the on-disk registry (``groups.py``), the
set that shutdown kills, and the reaper of the orphans killed commands leave us.
``ContainedProcess`` is one command: spawned in its own session inside its enclosure, read
as bytes from a pipe (stdout and stderr together, stdin from /dev/null) or from a pty
master (the slave is its controlling terminal, so Ctrl-C and /dev/tty work), and finished
by ``release``, which kills whatever is left of the enclosure and waits until it is empty.
A command whose thread's sandbox policy confines it is started by the sandbox's fork server
instead (``sandbox/``), which enters the same enclosure and confines the command before exec.

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
from typing import Mapping, Protocol

import trio

from echsd.logs import get_logger
from echsd.tools import procfs, strays
from echsd.tools.containment import PIDNS, Containment, Enclosure, Prepared
from echsd.tools.containment_probe import detect_containment
from echsd.tools.envpolicy import EnvPolicy
from echsd.tools.groups import GroupRegistry
from echsd.tools.sandbox.policy import SandboxPolicy
from echsd.tools.sandbox.runtime import SandboxRuntime

log = get_logger(__name__)

READ_CHUNK = 65536
PTY_ROWS, PTY_COLUMNS = 24, 80  # Codex's pty size
RECENT_LEADERS = 256  # process groups whose orphans are still recognised as ours
# What Codex sets for its exec sessions: no colours, no pagers, a terminal nobody drives.
COMMAND_ENV = {"NO_COLOR": "1", "TERM": "dumb", "COLORTERM": "", "PAGER": "cat", "GIT_PAGER": "cat", "GH_PAGER": "cat"}


class Waitable(Protocol):
    """A started command: a ``trio.Process``, or one the sandbox's fork server started."""

    pid: int

    async def wait(self) -> int: ...


@dataclass
class ToolProcesses:
    containment: Containment
    registry: GroupRegistry | None = None
    live: dict[int, Enclosure] = field(default_factory=dict)
    recent: deque[int] = field(default_factory=lambda: deque(maxlen=RECENT_LEADERS))
    sandbox: SandboxRuntime = field(default_factory=SandboxRuntime)
    env_policy: EnvPolicy = field(default_factory=EnvPolicy)  # what commands see of our environment

    async def spawn(
        self, argv: list[str], *, cwd: str, env: Mapping[str, str], tty: bool, sandbox: SandboxPolicy | None = None, pipes: bool = False
    ) -> "ContainedProcess":
        """Start ``argv`` in a new enclosure, confined by ``sandbox`` (a policy that confines
        something goes through the sandbox's fork server). OSError when it cannot be started.

        ``pipes``: stdin, stdout and stderr are three pipes of their own (``stdin``,
        ``output``, ``errors``), for a program spoken to over stdio (an MCP server)."""
        with strays.starting():  # no sweep takes it for a stray before it is known
            return await self._spawn(argv, cwd=cwd, env=env, tty=tty, sandbox=sandbox, pipes=pipes)

    async def _spawn(
        self, argv: list[str], *, cwd: str, env: Mapping[str, str], tty: bool, sandbox: SandboxPolicy | None, pipes: bool
    ) -> "ContainedProcess":
        if pipes:
            return await self._spawn_piped(argv, self.containment.prepare(argv, None), cwd, env, sandbox)
        master = slave = None
        if tty:
            master, slave = os.openpty()
            fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", PTY_ROWS, PTY_COLUMNS, 0, 0))
        tty_path = os.ttyname(slave) if slave is not None else None
        prepared = self.containment.prepare(argv, tty_path)
        if sandbox is not None and sandbox.confined:
            return await self._spawn_confined(argv, prepared, cwd, env, sandbox, master, slave, tty_path)
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
        if master is not None:
            return self._enclosed(process, prepared, trio.lowlevel.FdStream(master), tty=True)
        assert process.stdout is not None
        return self._enclosed(process, prepared, process.stdout, tty=False)

    async def _spawn_confined(
        self, argv: list[str], prepared: Prepared, cwd: str, env: Mapping[str, str], policy: SandboxPolicy, master: int | None, slave: int | None, tty_path: str | None
    ) -> "ContainedProcess":
        """The fork server's child enters the enclosure itself (cgroup, or a PID namespace it
        leads) before confining itself, so ``prepared.argv``'s launcher is not used."""
        request = _confined_request(argv, prepared, cwd, env, policy, tty_path)
        output = None
        opened: list[int] = []
        try:
            if slave is not None:
                stdio = [slave, slave, slave]
            else:
                output, write_end = os.pipe2(os.O_CLOEXEC)
                opened.append(write_end)
                null = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
                opened.append(null)
                stdio = [null, write_end, write_end]
            process = await self.sandbox.spawn(request, stdio)
        except BaseException:
            prepared.abandon()
            for fd in (master, output):
                if fd is not None:
                    os.close(fd)
            raise
        finally:
            for fd in (*opened, *([slave] if slave is not None else [])):
                os.close(fd)
        if master is not None:
            return self._enclosed(process, prepared, trio.lowlevel.FdStream(master), tty=True)
        assert output is not None
        return self._enclosed(process, prepared, trio.lowlevel.FdStream(output), tty=False)

    async def _spawn_piped(self, argv: list[str], prepared: Prepared, cwd: str, env: Mapping[str, str], policy: SandboxPolicy | None) -> "ContainedProcess":
        """Three pipes, the same whether the fork server confines the command or not."""
        pipes = [os.pipe2(os.O_CLOEXEC) for _ in range(3)]  # (read end, write end) each
        child = [pipes[0][0], pipes[1][1], pipes[2][1]]
        ours = [pipes[0][1], pipes[1][0], pipes[2][0]]
        try:
            if policy is not None and policy.confined:
                process: Waitable = await self.sandbox.spawn(_confined_request(argv, prepared, cwd, env, policy, None), child)
            else:
                process = await trio.lowlevel.open_process(
                    prepared.argv, cwd=cwd, env=dict(env), stdin=child[0], stdout=child[1], stderr=child[2], start_new_session=True
                )
        except BaseException:
            prepared.abandon()
            for fd in ours:
                os.close(fd)
            raise
        finally:
            for fd in child:
                os.close(fd)
        stdin, output, errors = (trio.lowlevel.FdStream(fd) for fd in ours)
        contained = self._enclosed(process, prepared, output, tty=False)
        contained.stdin, contained.errors = stdin, errors
        return contained

    def _enclosed(self, process: Waitable, prepared: Prepared, output: trio.lowlevel.FdStream | trio.abc.ReceiveStream, *, tty: bool) -> "ContainedProcess":
        enclosure = prepared.enclose(process.pid)
        self.live[process.pid] = enclosure
        if self.registry is not None:
            self.registry.add(enclosure)
        stdin = output if tty and isinstance(output, trio.abc.SendStream) else None
        return ContainedProcess(self, process, enclosure, output, stdin, tty=tty)

    def forget(self, enclosure: Enclosure) -> None:
        self.live.pop(enclosure.leader, None)
        self.recent.append(enclosure.leader)
        if self.registry is not None:
            self.registry.remove(enclosure)
        strays.when_idle(self.sweep_strays)

    def sweep_strays(self) -> None:
        """Kill whatever left its command's cgroup (``strays.py``), then reap."""
        live = [enclosure.cgroup for enclosure in self.live.values() if enclosure.cgroup is not None]
        self.recent.extend(self.containment.sweep(live, list(self.live)))
        self.reap_orphans()

    def reap_orphans(self) -> None:
        """Reap the zombies of killed commands that were reparented to us. A process is
        reparented when its parent exits, which can be after its enclosure looked empty,
        so each release also reaps what earlier ones could not yet see."""

        def ours(pid: int, stat: procfs.ProcStat) -> bool:
            if pid in self.live:
                return False  # a leader: trio reaps it
            if stat.pgrp in self.live or stat.pgrp in self.recent or pid in self.recent:
                return True
            cgroup_id = procfs.cgroup_of(pid)
            return cgroup_id is not None and self.containment.holds(cgroup_id)

        procfs.reap_zombies(ours)

    def kill_all(self) -> None:
        """Shutdown safety net: SIGKILL every enclosure still alive (the tasks that own
        them empty and unregister them as they are cancelled)."""
        for enclosure in list(self.live.values()):
            enclosure.kill()
        self.containment.sweep(())


class ContainedProcess:
    """One running command. Reading and waiting may run in different tasks; ``release``
    must be called once, whatever happened (it is shielded from cancellation)."""

    def __init__(
        self,
        table: ToolProcesses,
        process: Waitable,
        enclosure: Enclosure,
        output: trio.abc.ReceiveStream,
        stdin: trio.abc.SendStream | None,
        *,
        tty: bool,
    ) -> None:
        self.table = table
        self.process = process
        self.enclosure = enclosure
        self.output = output
        self.stdin = stdin  # the pty master, or a pipe (``pipes``); None: /dev/null
        self.errors: trio.abc.ReceiveStream | None = None  # stderr, with ``pipes``
        self.pid = process.pid
        self.tty = tty

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
        """Write to the pty (or the stdin pipe); raises BrokenResourceError once the command is gone."""
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
            for stream in (self.stdin, self.errors):
                if stream is not None and stream is not self.output:
                    await stream.aclose()
            self.table.forget(self.enclosure)
        return code


def _confined_request(argv: list[str], prepared: Prepared, cwd: str, env: Mapping[str, str], policy: SandboxPolicy, tty_path: str | None) -> dict[str, object]:
    """What the sandbox's fork server needs to start one confined command."""
    return {
        "argv": argv,
        "env": dict(env),
        "cwd": cwd,
        "policy": policy.to_json(),
        "cgroup_procs": str(prepared.cgroup / "cgroup.procs") if prepared.cgroup is not None else None,
        "pid_namespace": prepared.mechanism == PIDNS,
        "tty": tty_path is not None,
        "tty_path": tty_path,
    }


_table: ToolProcesses | None = None


def tool_processes() -> ToolProcesses:
    """The daemon's table (set up by ``use_group_registry``; detected on first use
    without a registry where nothing set it up, as in unit tests)."""
    global _table
    if _table is None:
        _table = ToolProcesses(detect_containment())
    return _table


def use_group_registry(directory: Path, *, claim_cgroup: bool = False, env_policy: EnvPolicy | None = None) -> int:
    """At daemon start: detect the containment mechanism (once per process), record live
    enclosures under ``directory`` from now on, and first kill what a crashed run left.
    ``claim_cgroup``: the daemon is the process's program and may own its cgroup
    (``strays.py``); ``env_policy``: what commands see of the environment. Returns the
    number of leftover enclosures killed."""
    global _table
    containment = _table.containment if _table is not None else detect_containment(claim=claim_cgroup)
    registry = GroupRegistry(directory)
    _table = ToolProcesses(
        containment, registry, sandbox=_table.sandbox if _table is not None else SandboxRuntime(), env_policy=env_policy or EnvPolicy()
    )
    return registry.kill_leftovers()


def use_sandbox(runtime: SandboxRuntime) -> None:
    """At daemon start: confine commands with ``runtime`` (its settings; probed by its ``start``)."""
    table = tool_processes()
    if table.sandbox is not runtime:
        table.sandbox.forkserver.close_now()
        table.sandbox = runtime


def sandbox_runtime() -> SandboxRuntime:
    return tool_processes().sandbox


def containment_name() -> str:
    """``cgroup``, ``pidns`` or ``process-group``: for ``echs status``."""
    return tool_processes().containment.name


def kill_all_groups() -> None:
    """Shutdown safety net: kill every enclosure a tool started that is still alive."""
    if _table is not None:
        _table.kill_all()
        _table.containment.close()
        _table.sandbox.forkserver.close_now()


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
    """The daemon's environment as the ``[tools]`` policy lets commands see it (never our
    secrets), with pagers and colours off."""
    env = tool_processes().env_policy.apply(os.environ)
    env.update(COMMAND_ENV)
    if extra:
        env.update(extra)
    return env
