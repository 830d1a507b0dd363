"""A second client's ``status`` latency while a real daemon handles large model outputs.

Scenarios (each a turn of a fresh thread, fed by ``echsd mock-upstream`` in its own process
from a script file): ``one_word``, an ``exec_command`` whose command is one 2 MB shell word
(a base64 blob); ``many_calls``, 25 parallel calls of 100 KB each; ``big_patch``, a
20,000-line ``apply_patch`` heredoc; ``too_large``, a 4.5 MB command (past the 4 MiB
``tool_argument_bytes``: refused, but every byte of it streamed and read). A probe asks ``status`` every 20 ms from a connection
of its own. Beside each, the raw limit: the same probe against the same daemon while it is
idle, in the same run; and the daemon's peak RSS over the run. Options: ``--rounds=N``
(default 3 turns per scenario).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

from bench.wirekit import ServeProcess, percentiles

PROBE_EVERY_S = 0.02
IDLE_PROBE_S = 2.0


def _blob(size: int) -> str:
    return ("QUJDRA" * (size // 6 + 1))[:size]


def _patch(lines: int) -> str:
    body = "\n".join(f"+line {index} of a file written in one call" for index in range(lines))
    return f"apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: big.txt\n{body}\n*** End Patch\nEOF\n"


def _calls(*calls: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"calls": list(calls)}, {"text": "done"}]


SCENARIOS = {
    "one_word": _calls({"name": "exec_command", "arguments": {"cmd": f"echo '{_blob(2_000_000)}' | base64 -d > f"}}),
    "many_calls": _calls(*({"name": "exec_command", "arguments": {"cmd": f"echo {_blob(100_000)}", "workdir": "/nonexistent"}} for _ in range(25))),
    "big_patch": _calls({"name": "exec_command", "arguments": {"cmd": _patch(20_000)}}),
    "too_large": _calls({"name": "exec_command", "arguments": {"cmd": f"echo {_blob(4_500_000)}"}}),
}


def _rounds_option(argv: list[str]) -> int:
    for arg in argv:
        if arg.startswith("--rounds="):
            return int(arg.split("=", 1)[1])
    return 3


class _Upstream:
    def __init__(self, root: Path) -> None:
        rules = [{"match": name.upper(), "steps": steps} for name, steps in SCENARIOS.items()]
        script = root / "script.json"
        script.write_text(json.dumps({"rules": rules, "endpoint": {"context_window": 100_000_000}}))
        command = [sys.executable, "-m", "echsd.cli.echsd_main", "mock-upstream", "--script", str(script)]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert self.process.stdout is not None
        self.base_url = f"http://127.0.0.1:{int(self.process.stdout.readline().split()[1])}/v1"

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(30)


async def _probe(state: Path, stop: trio.Event, samples: list[float]) -> None:
    from echsd.wire.client import connect

    async with connect(state_dir=state) as client:
        while not stop.is_set():
            started = time.perf_counter()
            await client.request("status", {})
            samples.append(time.perf_counter() - started)
            with trio.move_on_after(PROBE_EVERY_S):
                await stop.wait()


async def _idle(state: Path) -> list[float]:
    samples: list[float] = []
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_probe, state, stop, samples)
        await trio.sleep(IDLE_PROBE_S)  # the measurement window
        stop.set()
    return samples


async def _turn(state: Path, cwd: Path, text: str) -> tuple[list[float], str]:
    from echsd.wire.client import connect

    samples: list[float] = []
    stop = trio.Event()
    async with connect(state_dir=state) as sender, trio.open_nursery() as nursery:
        thread = (await sender.request("thread.create", {"cwd": str(cwd)}))["thread_id"]
        nursery.start_soon(_probe, state, stop, samples)
        await sender.request("thread.send", {"thread_id": thread, "text": text})
        async with sender.events(thread, since=0) as stream:
            async for event in stream:
                if event["event"] in ("turn.completed", "turn.error", "turn.interrupted"):
                    ended = event["event"]
                    break
        stop.set()
    return samples, ended


async def bench(rounds: int) -> dict[str, Any]:
    result: dict[str, Any] = {"rounds": rounds}
    with tempfile.TemporaryDirectory(prefix="bench-big-") as scratch:
        root = Path(scratch)
        upstream = _Upstream(root)
        daemon = ServeProcess(root / "state", base_url=upstream.base_url, tuning="retained_deltas = 20000")
        try:
            await daemon.ready()
            for name in SCENARIOS:
                idle = await _idle(daemon.state)
                busy: list[float] = []
                for index in range(rounds):
                    cwd = root / f"{name}-{index}"
                    cwd.mkdir()
                    samples, ended = await _turn(daemon.state, cwd, name.upper())
                    if ended != "turn.completed":
                        raise RuntimeError(f"{name}: the turn ended with {ended}")
                    busy.extend(samples)
                result[f"{name}_status_ms"] = percentiles(busy)
                result[f"{name}_status_max_ms"] = round(max(busy) * 1000, 2)
                result[f"{name}_idle_status_ms"] = percentiles(idle)  # the raw limit, same daemon, same moment
            result["daemon_peak_rss_mib"] = _peak_rss_mib(daemon.process.pid)
        finally:
            daemon.stop()
            upstream.stop()
    return result


def _peak_rss_mib(pid: int) -> float:
    """The daemon's peak resident set (VmHWM) over the whole run."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def main(argv: list[str]) -> dict[str, Any]:
    return trio.run(bench, _rounds_option(argv))
