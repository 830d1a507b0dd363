"""CPU accounting for benchmarks on a shared machine: a process's (or its main thread's)
CPU time, and how busy the machine was with *other* people's work while we measured.

``OthersMeter`` reads the kernel's total busy time (``/proc/stat``) and subtracts the CPU
time of our own processes (the bench, the daemon, the mock): what remains is the number of
cores other work kept busy, the figure that says whether a run was disturbed. The 1-minute
load average is reported beside it, as the issue asks, but it counts our own processes too.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int, thread: int | None = None) -> float:
    """User + system CPU seconds of process ``pid`` (all its threads), or of one thread."""
    path = f"/proc/{pid}/task/{thread}/stat" if thread is not None else f"/proc/{pid}/stat"
    with open(path) as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime (fields 14 and 15)


def _busy_s() -> float:
    with open("/proc/stat") as stat:
        values = [int(v) for v in stat.readline().split()[1:]]
    idle = values[3] + values[4]  # idle, iowait
    return (sum(values[:8]) - idle) / TICK  # up to steal; guest time is already in user


@dataclass
class Usage:
    seconds: float
    others_cores: float  # cores busy with work that is not ours, on average
    ours_cores: float
    load_1min: float  # at the end


class OthersMeter:
    """``with``-less: ``start = meter.mark()`` ... ``meter.since(start)``."""

    def __init__(self, pids: list[int]) -> None:
        self.last = dict.fromkeys([os.getpid(), *pids], 0.0)  # CPU seconds last seen per process

    def add(self, pid: int) -> None:
        self.last[pid] = 0.0

    def _ours_s(self) -> float:
        for pid in self.last:
            try:
                self.last[pid] = cpu_s(pid)
            except (FileNotFoundError, ProcessLookupError):  # it ended: its last reading stands
                pass
        return sum(self.last.values())

    def mark(self) -> tuple[float, float, float]:
        return time.monotonic(), _busy_s(), self._ours_s()

    def since(self, start: tuple[float, float, float]) -> Usage:
        now, busy, ours = self.mark()
        wall = max(now - start[0], 1e-9)
        mine = ours - start[2]
        return Usage(round(wall, 2), round(max(0.0, busy - start[1] - mine) / wall, 2), round(mine / wall, 2), round(os.getloadavg()[0], 2))
