"""``echs`` start-up: wall time of ``echs status`` and ``echs ls`` against a running daemon.

A real ``echsd serve --provider mock`` runs on a temporary state dir with 20 threads; each
command is run as a fresh process (as a user would), once to warm up (the byte-code cache)
and then N times, and the median, p90 and min
are reported, next to the bare interpreter start (``python -c pass``) and the import of
the client stack alone, which show where the time goes. Target: a median under 120 ms (issue 25).

``main(["--quick"])`` runs 5 times instead of 20.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

BIN = Path(sys.executable).parent
THREADS = 20


def timed(command: list[str], env: dict[str, str], runs: int) -> dict[str, float]:
    """Wall time of ``runs`` fresh processes, and their CPU time (user + system), which a
    busy machine moves much less than the wall time: the figure to read under load."""
    samples, cpu = [], []
    for _ in range(runs):
        before = _children_cpu_s()
        started = time.perf_counter()
        result = subprocess.run(command, env=env, capture_output=True, timeout=60)
        samples.append(time.perf_counter() - started)
        cpu.append(_children_cpu_s() - before)
        if result.returncode != 0:
            raise RuntimeError(f"{command} failed: {result.stderr.decode()}")
    ordered = sorted(samples)
    return {
        "median_ms": round(statistics.median(ordered) * 1000, 1),
        "p90_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))] * 1000, 1),
        "min_ms": round(ordered[0] * 1000, 1),
        "cpu_median_ms": round(statistics.median(cpu) * 1000, 1),
        "runs": runs,
    }


def _children_cpu_s() -> float:
    """CPU seconds of this process's reaped children (the commands ``timed`` waited for)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _start_daemon(state: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [str(BIN / "echsd"), "serve", "--provider", "mock", "--state-dir", str(state)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    ready = threading.Event()

    def drain() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            if "echsd ready" in line:
                ready.set()

    threading.Thread(target=drain, daemon=True).start()
    if not ready.wait(30):
        process.kill()
        raise RuntimeError("echsd serve did not start")
    return process


def main(argv: list[str]) -> dict[str, Any]:
    runs = 5 if "--quick" in argv else 20
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp:
        home = Path(tmp)
        # PYTHONDONTWRITEBYTECODE would make every run recompile our modules from source,
        # which no installed echs does: let the warm-up runs write the .pyc files.
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ECHS_", "OPENAI_", "PYTHONDONTWRITEBYTECODE"))}
        env.update(HOME=str(home), CODEX_HOME=str(home / "no-codex"), ECHS_STATE_DIR=str(home / "state"), NO_COLOR="1")
        daemon = _start_daemon(home / "state", env)
        try:
            echs = str(BIN / "echs")
            for _ in range(THREADS):
                subprocess.run([echs, "new"], env=env, capture_output=True, check=True, timeout=60)
            for warm_up in ([echs, "status"], [echs, "ls"], [echs, "ls", "--json"]):
                subprocess.run(warm_up, env=env, capture_output=True, check=True, timeout=60)
            return {
                "echs_status": timed([echs, "status"], env, runs),
                "echs_ls": timed([echs, "ls"], env, runs),
                "echs_ls_json": timed([echs, "ls", "--json"], env, runs),
                "python_startup": timed([sys.executable, "-c", "pass"], env, runs),
                "import_client_stack": timed([sys.executable, "-c", "import click, trio, echsd.wire.client"], env, runs),
                "threads": THREADS,
            }
        finally:
            daemon.terminate()
            daemon.wait(30)
