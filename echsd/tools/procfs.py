"""What /proc says about processes: state, group, start time, cgroup, our children.

Linux only, like the rest of the process layer. Every reader returns None/empty for a
process that is gone, since any of them can vanish between two reads.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Callable


@dataclass(frozen=True)
class ProcStat:
    state: str  # "R", "S", "Z", ...
    pgrp: int
    start_time: int  # clock ticks since boot: with the pid, names one process for good

    @property
    def zombie(self) -> bool:
        return self.state == "Z"


def proc_stat(pid: int) -> ProcStat | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return ProcStat(fields[0].decode(), int(fields[2]), int(fields[19]))


def start_time(pid: int) -> int | None:
    stat = proc_stat(pid)
    return None if stat is None else stat.start_time


def boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "unknown"


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes whose process group is ``pgid``."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            stat = proc_stat(int(name))
            if stat is not None and stat.pgrp == pgid and not stat.zombie:
                found.append(int(name))
    return found


def group_is_empty(pgid: int) -> bool:
    """No live process left in the group: a signal-0 probe first (no process at all, the
    usual case, answered without reading /proc), else a scan that ignores zombies."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass
    return not group_members(pgid)


def children_of(pid: int | str) -> list[int]:
    """Children of every thread of ``pid`` ("self" for ours)."""
    pids: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return pids
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                pids.extend(int(child) for child in handle.read().split())
        except OSError:
            continue
    return pids


def cgroup_of(pid: int | str) -> str | None:
    """The cgroup v2 path of a process as /proc shows it ("/a/b"), zombies included."""
    try:
        with open(f"/proc/{pid}/cgroup") as handle:
            for line in handle:
                if line.startswith("0::"):
                    return line[3:].strip()
    except OSError:
        return None
    return None


def reap_zombies(belongs: Callable[[int, ProcStat], bool]) -> None:
    """Reap our zombie children for which ``belongs(pid, stat)`` is true. Orphans of a
    killed command are reparented to us (we are a subreaper), so only we can reap them;
    anything else we spawned (trio waits for its own children) is none of our business."""
    for child in children_of("self"):
        stat = proc_stat(child)
        if stat is not None and stat.zombie and belongs(child, stat):
            try:
                os.waitpid(child, os.WNOHANG)
            except ChildProcessError:
                pass


def kill_quietly(pid: int, *, group: bool = False) -> None:
    """SIGKILL a process (or its group); one that is already gone is fine."""
    try:
        if group:
            os.killpg(pid, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
