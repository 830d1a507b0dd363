"""exec_command overhead versus a bare subprocess spawn: p50/p99 wall time of ``true``.

``bare_*``: ``true`` and ``bash -c true`` spawned with trio (``run_process``), nothing
else. Variants run interleaved, one call each in turn, so that all see the same load. ``exec_<mechanism>_*``: one ``exec_command {"cmd": "true"}`` through the tool and its
session manager (shell, enclosure, registry file, output pump, report), for each
containment mechanism that works here. ``overhead_<mechanism>_p50_ms`` is that p50 minus
the bare ``bash -c true`` p50: what containment and sessions add to the shell the command
runs in anyway. The calls pass ``login: false``, so the shell is the bare one's: a login
shell reads the user's profile, whatever that costs. Options: ``--runs=N`` (default 200
per variant).
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path
from typing import Awaitable, Callable

import trio

from bench.interleave import interleaved, summary
from echsd.tools import containment, containment_probe
from echsd.tools.base import ToolContext
from echsd.tools.exec_command import ExecCommand
from echsd.tools.groups import GroupRegistry
from echsd.tools.process import ToolProcesses, become_subreaper
from echsd.tools.sessions import ExecSessionManager


def _runs_option(argv: list[str]) -> int:
    for arg in argv:
        if arg.startswith("--runs="):
            return int(arg.split("=", 1)[1])
    return 200


async def bench(runs: int) -> dict[str, float | str]:
    become_subreaper()
    variants: dict[str, Callable[[], Awaitable[object]]] = {
        "bare_true": lambda: trio.run_process(["true"]),
        "bare_bash_true": lambda: trio.run_process(["bash", "-c", "true"]),
    }
    result: dict[str, float | str] = {"runs": runs}
    probes = {
        containment.CGROUP: containment_probe.probe_cgroup,
        containment.PIDNS: containment_probe.probe_pid_namespace,
        containment.PROCESS_GROUP: containment.Containment,
    }
    found_all = []
    with tempfile.TemporaryDirectory() as scratch:

        async def sink(stream: str, chunk: str) -> None:
            return None

        ctx = ToolContext("thr_bench", "turn_bench", "call_bench", Path(scratch), sink, 60.0)
        for mechanism, probe in probes.items():
            found = probe()
            if found is None:
                result[f"exec_{mechanism}"] = "unavailable"
                continue
            found_all.append(found)
            tool = ExecCommand(ExecSessionManager(processes=ToolProcesses(found, GroupRegistry(Path(scratch) / mechanism))))
            variants[f"exec_{mechanism}"] = lambda tool=tool: tool.run({"cmd": "true", "login": False}, ctx)
        samples = await interleaved(variants, runs)
        for found in found_all:
            found.close()
    for name, values in samples.items():
        result.update({f"{name}_{key}": value for key, value in summary(values).items()})
        if name.startswith("exec_"):
            overhead = statistics.median(values) - statistics.median(samples["bare_bash_true"])
            result[f"overhead_{name[5:]}_p50_ms"] = round(overhead, 3)
    return result


def main(argv: list[str]) -> dict:
    return trio.run(bench, _runs_option(argv))
