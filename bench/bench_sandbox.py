"""The sandbox's cost: ``exec_command true`` p50/p99, confined and not, beside a bare spawn.

Variants run interleaved (one call each in turn, so all see the same load), each through
the tool and its session manager on the best containment here:
``unsandboxed`` (the thread's sandbox does not confine: the trio spawn path),
``workspace_write_net_on`` / ``workspace_write_net_off`` / ``read_only`` (through the
sandbox's fork server: namespaces, mounts, Landlock), and the raw floor ``bare_bash_true``
(``bash -c true`` spawned with trio, nothing else). ``ratio_<variant>`` is that variant's
p50 over the unsandboxed p50: the target is at most 2 for workspace-write. Every call
passes ``login: false``: a login shell reads the user's profile, which can cost far more
than the sandbox (0.4 s for root's here) and would hide what is measured. Options:
``--runs=N`` (default 200 per variant).
"""

from __future__ import annotations

import statistics
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Awaitable, Callable

import trio

from bench.bench_exec import _runs_option
from bench.interleave import interleaved, summary
from echsd.tools.base import ToolContext
from echsd.tools.containment_probe import detect_containment
from echsd.tools.exec_command import ExecCommand
from echsd.tools.groups import GroupRegistry
from echsd.tools.process import ToolProcesses, become_subreaper
from echsd.tools.sandbox.runtime import SandboxRuntime
from echsd.tools.sessions import ExecSessionManager


async def bench(runs: int) -> dict[str, float | str]:
    become_subreaper()
    containment = detect_containment()
    result: dict[str, float | str] = {"runs": runs, "containment": containment.name}
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        (root / "cwd").mkdir()
        (root / "tmp").mkdir()
        runtime = SandboxRuntime(tmp_root=str(root / "tmp"), hidden=[str(root / "state")])
        support = await runtime.start()
        result["sandbox"] = support.name
        result["landlock_abi"] = support.landlock_abi
        tool = ExecCommand(ExecSessionManager(processes=ToolProcesses(containment, GroupRegistry(root / "groups"), sandbox=runtime)))

        async def sink(stream: str, chunk: str) -> None:
            return None

        base = ToolContext("thr_bench00000000000", "turn_bench", "call_bench", root / "cwd", sink, 60.0)

        def confined(mode: str, network: bool) -> ToolContext:
            return replace(base, sandbox=runtime.policy("thr_bench00000000000", mode=mode, network=network, cwd=str(root / "cwd")))

        contexts = {
            "unsandboxed": confined("full-access", True),
            "workspace_write_net_on": confined("workspace-write", True),
            "workspace_write_net_off": confined("workspace-write", False),
            "read_only": confined("read-only", False),
        }
        variants: dict[str, Callable[[], Awaitable[object]]] = {"bare_bash_true": lambda: trio.run_process(["bash", "-c", "true"])}
        for name, ctx in contexts.items():
            variants[name] = lambda ctx=ctx: tool.run({"cmd": "true", "login": False}, ctx)
        samples = await interleaved(variants, runs)
        await runtime.aclose()
        containment.close()
    for name, values in samples.items():
        result.update({f"{name}_{key}": value for key, value in summary(values).items()})
    unsandboxed = statistics.median(samples["unsandboxed"])
    for name in ("workspace_write_net_on", "workspace_write_net_off", "read_only"):
        result[f"ratio_{name}"] = round(statistics.median(samples[name]) / unsandboxed, 2)
    return result


def main(argv: list[str]) -> dict:
    return trio.run(bench, _runs_option(argv))
