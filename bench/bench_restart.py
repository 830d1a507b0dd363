"""Restart to ready with 10,000 stored threads (1M history items): target under 1 s.

Builds the database once (directly, not timed), then starts ``echsd serve`` on it as a
real process and times how long until a client completes ``hello`` and ``status`` over
the unix socket. Reports the daemon's resident memory once ready, too. The raw limit
beside it, measured in the same run: a fresh interpreter that imports the daemon's
modules and exits (what any start costs before it reads a row).

Options: ``--threads=N``, ``--items=N``, ``--runs=N``; ``--quick`` (1,000 threads, 100k
items).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

from bench.bench_cli import timed
from bench.bench_store import build_database
from bench.machine import cpu_s
from echsd import logs

TARGET_S = 1.0
IMPORTS = [sys.executable, "-c", "import echsd.daemon, echsd.cli.echsd_main"]


async def _wait_ready(state: Path, deadline: float) -> dict[str, Any]:
    from echsd.wire.client import WireError, connect

    while True:
        try:
            async with connect(state_dir=state, timeout=1.0) as client:
                return await client.status()
        except WireError:
            if time.monotonic() > deadline:
                raise
            await trio.sleep(0.005)  # polling a starting process for readiness


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def _env(state: Path) -> dict[str, str]:
    env = {**os.environ, "ECHS_LOG_LEVEL": "warning", "HOME": str(state.parent), "CODEX_HOME": str(state.parent / "none")}
    env.pop("OPENAI_API_KEY", None)
    return env


def one_start(state: Path) -> tuple[float, float, float, dict[str, Any]]:
    """(seconds from spawning ``echsd serve`` to a good ``status``, its CPU seconds by then
    (all its threads), RSS MiB then, the status)."""
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "echsd.cli.echsd_main", "serve", "--state-dir", str(state), "--provider", "mock"],
        env=_env(state),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        status = trio.run(_wait_ready, state, started + 60)
        ready = time.monotonic() - started
        cpu = cpu_s(process.pid)
        rss = _rss_mb(process.pid)
    finally:
        process.terminate()
        process.wait(30)
    return ready, cpu, rss, status


def _options(argv: list[str]) -> dict[str, int]:
    opts = {"threads": 10_000, "items": 1_000_000, "runs": 3}
    for arg in argv:
        if arg == "--quick":
            opts.update(threads=1_000, items=100_000)
        elif arg.startswith("--") and "=" in arg and arg[2:].split("=", 1)[0] in opts:
            key, value = arg[2:].split("=", 1)
            opts[key] = int(value)
    return opts


def measure(state: Path, threads: int, runs: int) -> dict[str, Any]:
    """Starts on an already built ``state``, each beside a raw import run (interleaved)."""
    readies, cpus, raws, raw_cpus = [], [], [], []
    rss, status = 0.0, {}
    for _ in range(runs):
        ready, cpu, rss, status = one_start(state)
        readies.append(ready)
        cpus.append(cpu)
        raw = timed(IMPORTS, _env(state), 1)
        raws.append(raw["median_ms"] / 1000)
        raw_cpus.append(raw["cpu_median_ms"] / 1000)
    assert status["threads"]["total"] == threads, status["threads"]
    return {
        "restart_to_ready_s": [round(r, 3) for r in readies],
        "restart_to_ready_s_median": round(statistics.median(readies), 3),
        "raw_python_start_and_imports_s_median": round(statistics.median(raws), 3),
        # CPU time, which a busy machine moves much less than wall time
        "restart_cpu_s_median": round(statistics.median(cpus), 3),
        "raw_python_start_and_imports_cpu_s_median": round(statistics.median(raw_cpus), 3),
        "daemon_rss_mb_when_ready": rss,
    }


def main(argv: list[str]) -> dict[str, Any]:
    opts = _options(argv)
    logs.configure(level="warning")  # the database is built in this process
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="echsd-restart-") as tmp:
        state = Path(tmp) / "state"
        t0 = time.perf_counter()
        build_database(state / "echsd.db", opts["threads"], opts["items"], 5)
        build_s = time.perf_counter() - t0
        measured = measure(state, opts["threads"], opts["runs"])
    return {
        "threads": opts["threads"],
        "items": opts["items"],
        "build_s": round(build_s, 1),
        **measured,
        "target_s": TARGET_S,
        "load_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }
