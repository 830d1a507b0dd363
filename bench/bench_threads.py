"""Thread runtime benchmark: delta throughput, turn overhead, interrupt latency.

The mock upstream runs as its own process (``echsd mock-upstream``) so it does not share
the daemon's CPU; the daemon runs in this process with a real store on a temp dir, and a
hub listener stands in for a subscribed client (every delta it counts is durable: the hub
publishes only after commit). Targets (issue 3): >= 40,000 deltas/s through one thread;
turn overhead < 10 ms beyond the upstream's own time; interrupt -> turn.interrupted
p99 < 100 ms while streaming and while a tool runs.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

from echsd.codex import Endpoint, ResponsesClient, ResponsesRequest
from echsd.daemon import Daemon
from echsd.events import Event
from echsd.settings import load_settings


def directive(step: Any) -> str:
    return "mock: " + json.dumps(step)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


class Waiter:
    """Counts deltas and wakes whoever waits for a given event type on one thread."""

    def __init__(self) -> None:
        self.deltas = 0
        self.first_delta_at: float | None = None
        self._delta_in_turn = False
        self.events: dict[str, list[tuple[float, Event]]] = {}
        self._changed = trio.Event()

    def __call__(self, event: Event) -> None:
        if event.type == "turn.delta":  # the hot path: count only, like a client would
            self.deltas += 1
            if self._delta_in_turn:
                return
            self._delta_in_turn = True  # the first delta of each turn is recorded
            if self.first_delta_at is None:
                self.first_delta_at = time.perf_counter()
        elif event.type == "turn.started":
            self._delta_in_turn = False
        self.events.setdefault(event.type, []).append((time.perf_counter(), event))
        self._changed.set()
        self._changed = trio.Event()

    async def wait(self, event_type: str, count: int) -> tuple[float, Event]:
        with trio.fail_after(120):
            while len(self.events.get(event_type, [])) < count:
                await self._changed.wait()
        return self.events[event_type][count - 1]


async def measure(base_url: str, state_dir: Path, deltas: int, turns: int, interrupts: int) -> dict[str, Any]:
    settings = load_settings(
        {"state_dir": str(state_dir), "provider": "openai", "base_url": base_url},
        {"HOME": str(state_dir), "CODEX_HOME": str(state_dir / "none")},
    )
    daemon = Daemon(settings)
    results: dict[str, Any] = {}
    async with trio.open_nursery() as nursery:
        await nursery.start(daemon.run)
        service = daemon.ops
        assert service is not None
        work = state_dir / "work"
        work.mkdir()

        # 1. Delta throughput through one thread, all deltas durable before counted.
        tid = (await service.create_thread(cwd=str(work)))["thread_id"]
        waiter = Waiter()
        daemon.hub.listen(tid, waiter)
        started = time.perf_counter()
        await service.send(tid, directive({"repeat": {"chunk": "x", "count": deltas}}))
        done_at, _ = await waiter.wait("turn.completed", 1)
        assert waiter.deltas == deltas, (waiter.deltas, deltas)
        first = waiter.first_delta_at or started
        results["deltas"] = deltas
        results["deltas_per_s"] = round(deltas / (done_at - first))
        results["deltas_per_s_incl_turn_start"] = round(deltas / (done_at - started))

        # 2. Turn overhead: daemon turn time minus the upstream's own time for the same request.
        client = ResponsesClient(Endpoint(base_url))
        body_text = directive({"text": "ok"})
        upstream_times = []
        for _ in range(turns):
            request = ResponsesRequest(model="m", instructions="x", input=[{"type": "message", "role": "user", "content": [{"type": "input_text", "text": body_text}]}])
            t0 = time.perf_counter()
            async with client.stream(request) as events:
                async for _event in events:
                    pass
            upstream_times.append(time.perf_counter() - t0)
        await client.aclose()
        turn_times = []
        tid2 = (await service.create_thread(cwd=str(work)))["thread_id"]
        waiter2 = Waiter()
        daemon.hub.listen(tid2, waiter2)
        for index in range(turns):
            t0 = time.perf_counter()
            await service.send(tid2, body_text)
            done_at, _ = await waiter2.wait("turn.completed", index + 1)
            turn_times.append(done_at - t0)
        overhead = [(t - u) * 1000 for t, u in zip(sorted(turn_times), sorted(upstream_times))]
        results["turn_ms_p50"] = round(statistics.median(turn_times) * 1000, 2)
        results["upstream_ms_p50"] = round(statistics.median(upstream_times) * 1000, 2)
        results["turn_overhead_ms_p50"] = round(statistics.median(overhead), 2)
        results["turn_overhead_ms_p99"] = round(percentile(overhead, 0.99), 2)

        # 3. Interrupt latency while streaming and while a tool runs.
        for label, step, ready_type in (
            ("streaming", {"text": " ".join(["w"] * 2000), "deltas": 2000, "delay_ms": 5}, "turn.delta"),
            ("tool", {"calls": [{"name": "exec_command", "arguments": {"cmd": "echo go; sleep 60"}}]}, "tool.output"),
        ):
            latencies = []
            tid3 = (await service.create_thread(cwd=str(work)))["thread_id"]
            waiter3 = Waiter()
            daemon.hub.listen(tid3, waiter3)
            for index in range(interrupts):
                await service.send(tid3, directive(step))
                await waiter3.wait(ready_type, len(waiter3.events.get(ready_type, [])) + 1)
                t0 = time.perf_counter()
                await service.interrupt(tid3)
                at, _ = await waiter3.wait("turn.interrupted", index + 1)
                latencies.append((at - t0) * 1000)
            results[f"interrupt_{label}_ms_p50"] = round(statistics.median(latencies), 2)
            results[f"interrupt_{label}_ms_p99"] = round(percentile(latencies, 0.99), 2)
        daemon.request_stop()
    return results


def main(argv: list[str]) -> dict[str, Any]:
    quick = "--quick" in argv
    deltas = 20_000 if quick else 200_000
    turns = 20 if quick else 100
    interrupts = 10 if quick else 50
    mock = subprocess.Popen(
        [sys.executable, "-m", "echsd.cli.echsd_main", "mock-upstream"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert mock.stdout is not None
        port = int(mock.stdout.readline().split()[1])
        with tempfile.TemporaryDirectory() as tmp:
            results = trio.run(measure, f"http://127.0.0.1:{port}/v1", Path(tmp) / "state", deltas, turns, interrupts)
    finally:
        mock.terminate()
        mock.wait()
    results["targets"] = {
        "deltas_per_s": ">= 40000",
        "turn_overhead_ms_p50": "< 10",
        "interrupt_streaming_ms_p99": "< 100",
        "interrupt_tool_ms_p99": "< 100",
    }
    return results
