"""Restart to ready with 10,000 stored threads (1M history items): target under 2 s.

Builds the database once (directly, not timed), then starts ``echsd serve`` on it as a
real process and times how long until a client completes ``hello`` and ``status`` over
the unix socket. Reports the daemon's resident memory once ready, too.
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

from bench.bench_store import build_database


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


def _one_start(state: Path) -> tuple[float, float, dict[str, Any]]:
    env = {**os.environ, "ECHS_LOG_LEVEL": "warning", "HOME": str(state.parent), "CODEX_HOME": str(state.parent / "none")}
    env.pop("OPENAI_API_KEY", None)
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "echsd.cli.echsd_main", "serve", "--state-dir", str(state), "--provider", "mock"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        status = trio.run(_wait_ready, state, started + 60)
        ready = time.monotonic() - started
        rss = _rss_mb(process.pid)
    finally:
        process.terminate()
        process.wait(30)
    return ready, rss, status


def main(argv: list[str]) -> dict[str, Any]:
    quick = "--quick" in argv
    threads, items = (1_000, 100_000) if quick else (10_000, 1_000_000)
    with tempfile.TemporaryDirectory(prefix="echsd-restart-") as tmp:
        state = Path(tmp) / "state"
        t0 = time.perf_counter()
        build_database(state / "echsd.db", threads, items, 5)
        build_s = time.perf_counter() - t0
        runs = [_one_start(state) for _ in range(3)]
    readies = [ready for ready, _, _ in runs]
    status = runs[-1][2]
    assert status["threads"]["total"] == threads, status["threads"]
    return {
        "threads": threads,
        "items": items,
        "build_s": round(build_s, 1),
        "restart_to_ready_s": [round(r, 3) for r in readies],
        "restart_to_ready_s_median": round(statistics.median(readies), 3),
        "daemon_rss_mb_when_ready": runs[-1][1],
        "target_s": 2.0,
    }
