"""The soak's tool processes, found in ``/proc`` by the marker in their name.

One task rescans every ``PERIOD_S``; waiters look at the latest scan. A marker is unique
per command (``soak<run>-<thread>-<n>``), so what a scan finds under it belongs to that
command and to no other process on the machine.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import trio

PERIOD_S = 0.25


def scan(prefix: str) -> dict[int, str]:
    """pid -> argv[0] of every process whose name starts with ``prefix``."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv0 = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0", 1)[0]
        except OSError:
            continue  # gone between listdir and read
        if argv0.startswith(prefix.encode()):
            found[int(entry)] = argv0.decode(errors="replace")
    return found


class ToolProcesses:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.latest: dict[int, str] = {}
        self._scanned = trio.Event()

    async def run(self) -> None:
        while True:
            self.latest = await trio.to_thread.run_sync(scan, self.prefix)
            self._scanned.set()
            self._scanned = trio.Event()
            await trio.sleep(PERIOD_S)

    def matching(self, marker: str) -> dict[int, str]:
        return {pid: name for pid, name in self.latest.items() if name.startswith(marker)}

    async def wait_present(self, marker: str, timeout: float) -> bool:
        with trio.move_on_after(timeout):
            while not self.matching(marker):
                await self._scanned.wait()
            return True
        return False

    async def wait_gone(self, marker: str, timeout: float) -> dict[int, str]:
        """What is still there after ``timeout`` (nothing: all gone)."""
        with trio.move_on_after(timeout):
            while self.matching(marker):
                await self._scanned.wait()
            return {}
        return self.matching(marker)


def kill_leftovers(prefix: str, timeout: float = 5.0) -> dict[int, str]:
    """SIGKILL whatever the soak's commands left (they are ours: the marker says so)."""
    left = scan(prefix)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + timeout
    while scan(prefix) and time.monotonic() < deadline:
        time.sleep(0.05)  # waiting for the kernel to reap what we killed
    return left
