"""Run a command in its own process group, capture its output, and never leave it behind.

Every command starts a new session (so a new process group, and no controlling terminal
of ours). Whatever way the call ends (normal exit, timeout, interrupt, daemon shutdown),
the whole group gets SIGKILL and the leader is reaped before we return, so an interrupt
leaves no child running. ``live_groups`` tracks groups still alive for shutdown.
"""

from __future__ import annotations

import codecs
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Awaitable, Callable, Mapping

import trio

from echsd.logs import get_logger
from echsd.tools.groups import GroupRegistry

log = get_logger(__name__)

READ_CHUNK = 65536
DRAIN_AFTER_EXIT_S = 0.25  # output still buffered in the pipe when the leader exits
SECRET_ENV = ("OPENAI_API_KEY", "ECHS_TOKEN")

live_groups: set[int] = set()
_registry: GroupRegistry | None = None


def use_group_registry(directory: Path) -> int:
    """Record live groups under ``directory`` from now on; first kill what a crashed run left.

    Returns the number of leftover groups killed.
    """
    global _registry
    _registry = GroupRegistry(directory)
    return _registry.kill_leftovers()


@dataclass(frozen=True)
class CommandResult:
    exit_code: int | None  # None when killed by us (timeout) before it exited
    signal: int | None
    output: str
    timed_out: bool
    wall_s: float
    bytes_seen: int


class _Capture:
    """Keeps the first and last ``limit`` characters of a stream of unknown length."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.head: list[str] = []
        self.head_len = 0
        self.tail = ""
        self.dropped = 0

    def add(self, text: str) -> None:
        if self.head_len < self.limit:
            take = text[: self.limit - self.head_len]
            self.head.append(take)
            self.head_len += len(take)
            text = text[len(take) :]
        if text:
            self.tail += text
            if len(self.tail) > self.limit:
                self.dropped += len(self.tail) - self.limit
                self.tail = self.tail[-self.limit :]

    def text(self) -> str:
        middle = f"\n[... {self.dropped} chars not captured ...]\n" if self.dropped else ""
        return "".join(self.head) + middle + self.tail


def shell_argv(command: str) -> list[str]:
    shell = shutil.which("bash") or "/bin/sh"
    return [shell, "-c", command]


def command_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The daemon's environment minus our secrets, with pagers and colours off."""
    env = {k: v for k, v in os.environ.items() if k not in SECRET_ENV}
    env.update({"PAGER": "cat", "GIT_PAGER": "cat", "TERM": env.get("TERM", "dumb") or "dumb"})
    if extra:
        env.update(extra)
    return env


def kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


async def _wait_group_gone(pgid: int, budget_s: float = 1.0) -> None:
    """Wait until no live process of the group is left, so "the call ended" means it.

    Members other than the leader are not our children (or are orphans reparented to us as
    subreaper): we cannot ``wait()`` on them through trio, only watch the group empty after
    SIGKILL and reap the group's zombies that are ours. Bounded: a process stuck in
    uninterruptible IO is logged, not waited for forever.
    """
    deadline = trio.current_time() + budget_s
    delay = 0.001
    while True:
        _reap_group_zombies(pgid)
        if not _live_members(pgid):
            return
        if trio.current_time() > deadline:
            log.warning("process group still alive after SIGKILL", pgid=pgid)
            return
        kill_group(pgid)
        await trio.sleep(delay)
        delay = min(delay * 2, 0.05)


def _proc_stat(pid: int) -> tuple[str, int] | None:
    """(state, pgrp) of a process from /proc, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0].decode(), int(fields[2])


def _live_members(pgid: int) -> list[int]:
    members = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            stat = _proc_stat(int(name))
            if stat is not None and stat[1] == pgid and stat[0] != "Z":
                members.append(int(name))
    return members


def _reap_group_zombies(pgid: int) -> None:
    """Reap our zombie children from a tool's group (never the leader: trio owns it)."""
    for child in _children():
        if child == pgid:
            continue
        stat = _proc_stat(child)
        if stat is not None and stat[0] == "Z" and stat[1] == pgid:
            try:
                os.waitpid(child, os.WNOHANG)
            except ChildProcessError:
                pass


def _children() -> list[int]:
    pids: list[int] = []
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return pids
    for task in tasks:
        try:
            with open(f"/proc/self/task/{task}/children") as handle:
                pids.extend(int(pid) for pid in handle.read().split())
        except OSError:
            continue
    return pids


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


def kill_all_groups() -> None:
    """Shutdown safety net: kill every process group a tool started that is still alive."""
    for pgid in list(live_groups):
        kill_group(pgid)
        live_groups.discard(pgid)


async def run_command(
    argv: list[str],
    *,
    cwd: str,
    timeout_s: float,
    on_output: Callable[[str], Awaitable[None]] | None = None,
    capture_limit: int = 512 * 1024,
    env: Mapping[str, str] | None = None,
) -> CommandResult:
    started = time.monotonic()
    process = await trio.lowlevel.open_process(
        argv,
        cwd=cwd,
        env=dict(env) if env is not None else command_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    pgid = process.pid
    live_groups.add(pgid)
    if _registry is not None:
        _registry.add(pgid)
    capture = _Capture(capture_limit)
    counters = {"bytes": 0}
    pump_done = trio.Event()
    timed_out = False
    try:
        with trio.move_on_after(timeout_s) as timer:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_pump, process.stdout, capture, on_output, counters, pump_done)
                await process.wait()
                with trio.move_on_after(DRAIN_AFTER_EXIT_S):
                    await pump_done.wait()
                nursery.cancel_scope.cancel()
        timed_out = timer.cancelled_caught
    finally:
        kill_group(pgid)
        with trio.CancelScope(shield=True):
            await process.wait()
            if process.stdout is not None:
                await process.stdout.aclose()
            await _wait_group_gone(pgid)
        live_groups.discard(pgid)
        if _registry is not None:
            _registry.remove(pgid)
    code = process.returncode
    signal_number = -code if code is not None and code < 0 else None
    return CommandResult(
        exit_code=None if timed_out else (code if signal_number is None else None),
        signal=None if timed_out else signal_number,
        output=capture.text(),
        timed_out=timed_out,
        wall_s=time.monotonic() - started,
        bytes_seen=counters["bytes"],
    )


async def _pump(
    stream: trio.abc.ReceiveStream | None,
    capture: _Capture,
    on_output: Callable[[str], Awaitable[None]] | None,
    counters: dict[str, int],
    done: trio.Event,
) -> None:
    if stream is None:
        done.set()
        return
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    try:
        while True:
            chunk = await stream.receive_some(READ_CHUNK)
            if not chunk:
                break
            counters["bytes"] += len(chunk)
            text = decoder.decode(chunk)
            if text:
                capture.add(text)
                if on_output is not None:
                    await on_output(text)
        tail = decoder.decode(b"", final=True)
        if tail:
            capture.add(tail)
    finally:
        done.set()
