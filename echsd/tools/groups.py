"""Remember every live tool process group on disk, so a crashed daemon's leftovers die too.

A tool's process group outlives a daemon killed with SIGKILL (it has its own session), and
nobody would ever stop it. Each group therefore gets a small file, ``<dir>/<pgid>``, holding
the boot id and the leader's start time; the file goes when the group is reaped. At start
the daemon kills every group a previous run left behind. The boot id and start time make
sure a recycled pid is never mistaken for ours: the group is killed only if its leader is
still the very process we started or, with the leader gone, if members remain (the kernel
does not reuse a pid while it still names a process group).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

from echsd.logs import get_logger

log = get_logger(__name__)


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "unknown"


def _start_time(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return int(handle.read().rsplit(b")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def _members(pgid: int) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != b"Z":
            found.append(int(name))
    return found


class GroupRegistry:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.boot_id = _boot_id()
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)

    def add(self, pgid: int) -> None:
        try:
            (self.directory / str(pgid)).write_text(f"{self.boot_id} {_start_time(pgid)}\n")
        except OSError as exc:  # bookkeeping must never stop a tool from running
            log.warning("cannot record process group", pgid=pgid, error=str(exc))

    def remove(self, pgid: int) -> None:
        try:
            (self.directory / str(pgid)).unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            log.warning("cannot forget process group", pgid=pgid, error=str(exc))

    def kill_leftovers(self) -> int:
        """Kill the groups a previous daemon left running; returns how many were killed."""
        killed = 0
        for entry in self.directory.iterdir():
            if not entry.name.isdigit():
                continue
            pgid = int(entry.name)
            if self._still_ours(pgid, entry):
                try:
                    os.killpg(pgid, signal.SIGKILL)
                    killed += 1
                except (ProcessLookupError, PermissionError):
                    pass
            entry.unlink(missing_ok=True)
        if killed:
            log.warning("killed process groups left by a previous run", groups=killed)
        return killed

    def _still_ours(self, pgid: int, entry: Path) -> bool:
        try:
            boot_id, start_text = entry.read_text().split()
        except (OSError, ValueError):
            return False
        if boot_id != self.boot_id:
            return False
        leader_start = _start_time(pgid)
        if leader_start is not None:
            return start_text == str(leader_start)
        return bool(_members(pgid))
