"""Shared by the exec tests: a tool context, the containment mechanisms that work here, the
commands that try to escape, and waiting on /proc conditions with a timeout."""

from __future__ import annotations

import functools
import uuid
from pathlib import Path
from typing import Callable

import pytest
import trio

from echsd.tools import containment, containment_probe
from echsd.tools.base import ToolContext
from echsd.tools.process import ToolProcesses
from tests.threads.test_control import processes_with

__all__ = ["processes_with"]


def context(cwd: Path, chunks: list[str] | None = None, *, turn_id: str = "turn_1", timeout_s: float = 60.0) -> ToolContext:
    async def sink(stream: str, chunk: str) -> None:
        if chunks is not None:
            chunks.append(chunk)

    return ToolContext("thr_0000000000000000", turn_id, "call_x", cwd, sink, timeout_s)


async def wait_until(condition: Callable[[], object], timeout: float = 10.0) -> None:
    """Poll a /proc condition (nothing else can signal it) until it holds, or fail."""
    with trio.fail_after(timeout):
        while not condition():
            await trio.sleep(0.01)


@functools.cache
def available_mechanisms() -> dict[str, containment.Containment | None]:
    """Each mechanism as probed in this environment (None: not available here)."""
    return {
        containment.CGROUP: containment_probe.probe_cgroup(),
        containment.PIDNS: containment_probe.probe_pid_namespace(),
        containment.PROCESS_GROUP: containment.Containment(),
    }


def table_for(mechanism: str) -> ToolProcesses:
    found = available_mechanisms()[mechanism]
    if found is None:
        pytest.skip(f"{mechanism} containment is not available here")
    return ToolProcesses(found)


def marker() -> str:
    """A unique ``sleep`` argument, so a process can be found in /proc by its command line."""
    return f"3{uuid.uuid4().int % 10**6:06d}"


ESCAPES = {
    "setsid": "setsid sleep {m} &",
    "perl-setpgrp": "perl -e 'setpgrp(0,0); exec \"sleep\", \"{m}\"' &",
    "double-fork": (
        "python3 -c 'import os, sys\nif os.fork(): sys.exit()\nos.setsid()\n"
        "if os.fork(): sys.exit()\nos.execvp(\"sleep\", [\"sleep\", \"{m}\"])'\n"
    ),
    "sh-background": "sh -c 'sleep {m} & sleep {m}' &",
}


def escaping_command(names: list[str], then: str) -> tuple[str, list[str]]:
    """A command running each named escape (with its own marker), then ``then``."""
    import shutil

    markers, parts = [], []
    for name in names:
        if name == "perl-setpgrp" and shutil.which("perl") is None:
            continue
        m = marker()
        markers.append(m)
        parts.append(ESCAPES[name].format(m=m))
    return " ".join(parts) + f" {then}", markers


def until_escaped(markers: list[str]) -> str:
    """Shell code that returns once the ``sleep`` of every marker runs."""
    return "; ".join(f'until pgrep -xf "sleep {m}" >/dev/null; do sleep 0.01; done' for m in markers)


def alive(markers: list[str]) -> list[int]:
    """Every process whose command line mentions one of the markers (shells included)."""
    return [pid for m in markers for pid in processes_with(m)]


def escaped(markers: list[str]) -> bool:
    """Whether the ``sleep`` of every marker runs (the escapes are done)."""
    wanted = {f"sleep\0{m}\0".encode() for m in markers}
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                found.add((entry / "cmdline").read_bytes())
            except OSError:
                continue
    return wanted <= found
