"""``make bench-quick``: the headline figures in about a minute, each beside its raw limit.

Every figure is measured in the same run as the fastest way to do the same job without
echsd, and reported as the ratio of the two: a slow or busy machine moves both, so the
ratio says what echsd costs. Throughputs: share of the limit (higher is better); times:
multiple of the floor (lower is better).

| figure | raw limit |
|---|---|
| deltas/s through one thread to a subscribed client | the same stream, from the same mock upstream, read by ``ResponsesClient`` directly |
| turn time: send to ``turn.completed`` at the client (a one-word reply) | the same request straight to the mock upstream |
| events/s replayed (``subscribe`` since 0) to one client | a bare trio-websocket + msgpack server, one client |
| events/s live to 100 clients | the bare server, fanning out to 100 clients |
| delta latency, one thread at 1 delta/ms | a ``status`` round trip on the same connection |
| interrupt to ``turn.interrupted`` at the client, while streaming | a ``status`` round trip |
| durable event rows/s through the store writer | apsw ``executemany`` of the same rows |
| ``exec_command`` running ``true`` | ``bash -c true`` spawned bare |
| ``echs status`` wall time | ``python -c pass`` |
| restart to ready with the run's threads | the interpreter starting and importing the daemon |

The mock upstream (``echsd mock-upstream``), ``echsd serve --provider openai --base-url``
pointed at it and the raw server each run in their own process, as in production; the
clients are lean (``wirekit.LeanConn``). Then the sweep: N threads (1, 10, 100, 1,000)
stream at once, each a reply of 100 deltas 10 ms apart (100 deltas/s, faster than a model
writes; at most 10,000 deltas a point, so 1,000 threads send 10 each), to one client subscribed to ``*``: the offered load grows with N until the daemon
saturates. Per N: deltas/s delivered (from the sends to the last delta) and the delta
latency (from the event's ``ts``, stamped when the turn loop takes the delta from the
upstream, to its arrival at the client) p50/p99, beside a ``status`` round trip.

Writes ``bench/results/latest.json``, ``latest.md`` and ``latest.png`` (the plot needs
matplotlib, the ``bench`` extra, which ``make bench-quick`` installs). ``--publish`` also
copies them to ``docs/bench/``, which the README links; ``--threads=1,10,100`` changes the
sweep.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

from bench import report
from bench.bench_cli import timed
from bench.bench_store import event_throughput, raw_event_inserts
from bench.bench_wire import live, many_threads, paced_latency, replay_once
from bench.wirekit import REPO, LeanConn, RawServer, ServeProcess, connect_lean, percentiles, raw_rate, stream_text
from echsd import logs
from echsd.codex import Endpoint, ResponsesClient, ResponsesRequest, TextDelta
from echsd.codex.catalog import default_catalog

SWEEP = (1, 10, 100, 1000)
SWEEP_DELTAS, SWEEP_DELAY_MS = 100, 10  # per thread: a 1 s reply at 100 deltas/s, faster than models stream
SWEEP_POINT_MAX = 10_000  # deltas in all per point: 1,000 threads stream 10 each
STREAM_DELTAS = 20_000
FAN_CLIENTS, FAN_DELTAS = 100, 1_000
REPEATS = 3
TURNS = 20
INTERRUPTS = 10
PACED_DELTAS = 1_000
ROUND_TRIPS = 200
STORE_EVENTS = 30_000
EXEC_RUNS = 30
CLI_RUNS = 3
RESULTS = Path(__file__).parent / "results"
PUBLISHED = REPO / "docs" / "bench"
BIN = Path(sys.executable).parent


class MockUpstreamProcess:
    """``echsd mock-upstream`` in its own process, so it does not share the daemon's core."""

    def __init__(self) -> None:
        command = [sys.executable, "-m", "echsd.cli.echsd_main", "mock-upstream"]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert self.process.stdout is not None
        self.base_url = f"http://127.0.0.1:{int(self.process.stdout.readline().split()[1])}/v1"

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(30)


def _request(text: str) -> ResponsesRequest:
    return ResponsesRequest(model=default_catalog().recommended("openai") or "mock-model", instructions="x", input=[{"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}])


# -- raw limits that need no daemon ---------------------------------------------------------


async def upstream_stream_rate(base_url: str, deltas: int) -> float:
    """Deltas/s of one scripted stream read straight from the mock (first to last delta)."""
    client = ResponsesClient(Endpoint(base_url))
    first = last = 0.0
    seen = 0
    try:
        async with client.stream(_request(stream_text(deltas))) as events:
            async for event in events:
                if isinstance(event, TextDelta):
                    last = time.perf_counter()
                    first = first or last
                    seen += 1
    finally:
        await client.aclose()
    assert seen == deltas, (seen, deltas)
    return deltas / (last - first)


async def upstream_turn_times(base_url: str, turns: int) -> list[float]:
    client = ResponsesClient(Endpoint(base_url))
    times = []
    try:
        for _ in range(turns):
            started = time.perf_counter()
            async with client.stream(_request('mock: {"text": "ok"}')) as events:
                async for _event in events:
                    pass
            times.append(time.perf_counter() - started)
    finally:
        await client.aclose()
    return times


# -- through the daemon ---------------------------------------------------------------------


async def _watched_thread(nursery: trio.Nursery, daemon: ServeProcess, marked: str) -> tuple[LeanConn, str]:
    """A new thread and a connection subscribed to it that keeps its ``marked`` events."""
    conn = await connect_lean(nursery, daemon)
    conn.marked = {marked}
    tid = (await conn.request("thread.create", cwd=str(daemon.state)))["thread_id"]
    await conn.request("subscribe", thread_id=tid)
    return conn, tid


async def turn_times(daemon: ServeProcess, turns: int) -> list[float]:
    """Send to ``turn.completed`` at the client, one short reply at a time."""
    async with trio.open_nursery() as nursery:
        conn, tid = await _watched_thread(nursery, daemon, "turn.completed")
        times = []
        for index in range(turns):
            started = time.perf_counter()
            await conn.request("thread.send", thread_id=tid, text='mock: {"text": "ok"}')
            arrived, _ = await conn.until_marked("turn.completed", index + 1)
            times.append(arrived - started)
        nursery.cancel_scope.cancel()
    return times


async def status_round_trips(daemon: ServeProcess, count: int) -> list[float]:
    async with trio.open_nursery() as nursery:
        conn = await connect_lean(nursery, daemon)
        times = []
        for _ in range(count):
            started = time.perf_counter()
            await conn.request("status")
            times.append(time.perf_counter() - started)
        nursery.cancel_scope.cancel()
    return times


async def interrupt_latencies(daemon: ServeProcess, count: int) -> list[float]:
    """Interrupt request sent to ``turn.interrupted`` arrived, while a thread streams."""
    async with trio.open_nursery() as nursery:
        conn, tid = await _watched_thread(nursery, daemon, "turn.interrupted")
        times = []
        for index in range(count):
            conn.first_delta = 0.0
            await conn.request("thread.send", thread_id=tid, text=stream_text(2000, delay_ms=5))
            with trio.fail_after(30):
                while not conn.first_delta:
                    await conn.changed.wait()
            started = time.perf_counter()
            await conn.request("thread.interrupt", thread_id=tid)
            arrived, _ = await conn.until_marked("turn.interrupted", index + 1)
            times.append(arrived - started)
        nursery.cancel_scope.cancel()
    return times


def exec_overhead() -> dict[str, Any]:
    """``bench_exec`` in its own process (it makes that process a child subreaper)."""
    code = f"import json, sys; from bench.bench_exec import main; sys.stdout.write(json.dumps(main(['--runs={EXEC_RUNS}'])))"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True, timeout=120)
    return json.loads(out.stdout)


def cli_env(daemon: ServeProcess) -> dict[str, str]:
    env = {k: v for k, v in daemon.env.items() if not k.startswith("PYTHONDONTWRITEBYTECODE")}
    env["NO_COLOR"] = "1"
    return env


class Collected:
    """The figures, and how long each took to measure (from the previous one)."""

    def __init__(self) -> None:
        self.figures: list[report.Figure] = []
        self.seconds: dict[str, float] = {}
        self._mark = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.seconds[name] = round(now - self._mark, 2)
        self._mark = now

    def add(self, figure: report.Figure) -> None:
        self.figures.append(figure)
        self.lap(figure.key)


# -- the run --------------------------------------------------------------------------------


def _median(values: list[float]) -> float:
    return statistics.median(values)


async def _status(daemon: ServeProcess) -> dict[str, Any]:
    async with trio.open_nursery() as nursery:
        conn = await connect_lean(nursery, daemon)
        status = await conn.request("status")
        nursery.cancel_scope.cancel()
    return status


async def _throughput(got: Collected, daemon: ServeProcess, mock: MockUpstreamProcess, raw: RawServer) -> dict[str, float]:
    """Each echsd run next to a raw run, interleaved, so that the machine's load (it swings
    here) moves both; medians of ``REPEATS``."""
    upstream, thread, raw_1, replay = [], [], [], []
    for _ in range(REPEATS):
        upstream.append(await upstream_stream_rate(mock.base_url, STREAM_DELTAS))
        streamed = await live(daemon, 1, STREAM_DELTAS)
        thread.append(streamed["deltas_per_s"])
    got.add(report.Figure("thread_deltas_per_s", "deltas/s through one thread to a subscribed client", _median(thread), "deltas/s", "the same stream read from the mock by ResponsesClient", _median(upstream)))
    for _ in range(REPEATS):
        raw_1.append(await raw_rate(raw.path, 1, streamed["events"]))
        replay.append((await replay_once(daemon, streamed["thread_id"]))[0])
    got.add(report.Figure("replay_events_per_s", "events/s replayed to one client", _median(replay), "events/s", "bare trio-websocket + msgpack, 1 client", _median(raw_1)))
    raw_fan = await raw_rate(raw.path, FAN_CLIENTS, FAN_DELTAS)
    fan = await live(daemon, FAN_CLIENTS, FAN_DELTAS)
    got.add(report.Figure("live_100_clients_events_per_s", "events/s live to 100 clients (one thread)", fan["events_per_s"], "events/s", "bare trio-websocket + msgpack, 100 clients", raw_fan))
    return {"upstream_stream_deltas_per_s": round(_median(upstream)), "raw_ws_1_client_events_per_s": round(_median(raw_1)), "thread_id": streamed["thread_id"]}


async def _latency(got: Collected, daemon: ServeProcess, mock: MockUpstreamProcess, paced_thread: str) -> dict[str, float]:
    upstream_turns = await upstream_turn_times(mock.base_url, TURNS)
    daemon_turns = await turn_times(daemon, TURNS)
    got.add(report.Figure("turn_ms_p50", "turn time p50: send to turn.completed at the client", _median(daemon_turns) * 1000, "ms", "the same request straight to the mock", _median(upstream_turns) * 1000, better="lower"))
    rtt = percentiles(await status_round_trips(daemon, ROUND_TRIPS))
    paced = await paced_latency(daemon, paced_thread, PACED_DELTAS)
    got.add(report.Figure("delta_latency_paced_ms_p50", "delta latency p50, one thread at 1 delta/ms", paced["p50_ms"], "ms", "status round trip p50", rtt["p50_ms"], better="lower"))
    got.add(report.Figure("delta_latency_paced_ms_p99", "delta latency p99, one thread at 1 delta/ms", paced["p99_ms"], "ms", "status round trip p99", rtt["p99_ms"], better="lower"))
    interrupts = percentiles(await interrupt_latencies(daemon, INTERRUPTS))
    got.add(report.Figure("interrupt_ms_p50", "interrupt to turn.interrupted at the client, p50", interrupts["p50_ms"], "ms", "status round trip p50", rtt["p50_ms"], better="lower"))
    return rtt


async def _starts(got: Collected, daemon: ServeProcess) -> float:
    """``echs status`` against the daemon, then the daemon's own restart: seconds it took to stop."""
    env = cli_env(daemon)
    echs_status = [str(BIN / "echs"), "status"]
    await trio.to_thread.run_sync(timed, echs_status, env, 1)  # warm-up: byte-code cache
    echs = await trio.to_thread.run_sync(timed, echs_status, env, CLI_RUNS)
    python = await trio.to_thread.run_sync(timed, [sys.executable, "-c", "pass"], env, CLI_RUNS)
    got.add(report.Figure("echs_status_ms", "echs status wall time (median)", echs["median_ms"], "ms", "python -c pass", python["median_ms"], better="lower"))
    held = (await _status(daemon))["threads"]["total"]
    stopped = daemon.restart()
    ready_s = await daemon.ready()
    imports = await trio.to_thread.run_sync(timed, [sys.executable, "-c", "import echsd.daemon, echsd.cli.echsd_main"], env, CLI_RUNS)
    got.add(report.Figure("restart_to_ready_ms", f"restart to ready with {held:,} threads", ready_s * 1000, "ms", "python start + importing the daemon", imports["median_ms"], better="lower"))
    return stopped


async def _store(got: Collected, tmp: Path) -> None:
    store = await event_throughput(tmp / "store" / "echsd.db", STORE_EVENTS)
    raw = raw_event_inserts(tmp / "raw-store" / "echsd.db", STORE_EVENTS)
    got.add(report.Figure("store_events_per_s", "durable event rows/s through the store writer", store["durable_events_per_s"], "rows/s", "apsw executemany, 1,000 rows a transaction", raw["events_per_s"]))


def _exec(got: Collected) -> None:
    result = exec_overhead()
    mechanism = next((k[5:-7] for k in result if k.startswith("exec_") and k.endswith("_p50_ms")), None)
    if mechanism is not None:
        got.add(report.Figure("exec_true_ms_p50", f"exec_command true p50 ({mechanism} containment)", result[f"exec_{mechanism}_p50_ms"], "ms", "bash -c true spawned bare", result["bare_bash_true_p50_ms"], better="lower"))


async def run(sweep: tuple[int, ...]) -> dict[str, Any]:
    got = Collected()
    extra: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-quick-") as tmp:
        raw = RawServer(f"{tmp}/raw.sock")
        mock = MockUpstreamProcess()
        daemon = ServeProcess(Path(tmp) / "state", base_url=mock.base_url)
        try:
            await daemon.ready()
            got.lap("start")
            limits = await _throughput(got, daemon, mock, raw)
            raw.stop()
            rtt = await _latency(got, daemon, mock, limits.pop("thread_id"))
            extra["sweep"] = [await many_threads(daemon, count, min(SWEEP_DELTAS, SWEEP_POINT_MAX // count), SWEEP_DELAY_MS, connections=max(1, count // 100)) for count in sweep]
            extra["sweep_raw"] = {**limits, "status_round_trip": rtt}
            got.lap("sweep")
            extra["graceful_stop_s"] = round(await _starts(got, daemon), 3)
        finally:
            daemon.stop()
            mock.stop()
            raw.stop()
        await _store(got, Path(tmp))
    _exec(got)
    return {"figures": got.figures, **extra, "stage_s": got.seconds}


def _options(argv: list[str]) -> tuple[tuple[int, ...], bool]:
    sweep = SWEEP
    for arg in argv:
        if arg.startswith("--threads="):
            sweep = tuple(int(n) for n in arg.split("=", 1)[1].split(","))
        elif arg != "--publish":
            raise SystemExit(f"unknown option {arg!r}; known: --threads=1,10,100 --publish")
    return sweep, "--publish" in argv


def main(argv: list[str]) -> dict[str, Any]:
    sweep, publish = _options(argv)
    logs.configure(level="warning")  # the store runs in this process for its figure
    started = time.perf_counter()
    load_before = os.getloadavg()[0]
    measured = trio.run(run, sweep)
    machine = {
        "cpus": os.cpu_count(),
        "load_1min_before": round(load_before, 2),
        "load_1min_after": round(os.getloadavg()[0], 2),
        "python": platform.python_version(),
        "when": time.strftime("%Y-%m-%d %H:%M %Z"),
        "wall_s": round(time.perf_counter() - started, 1),
    }
    result = report.document(measured, machine)
    written = report.write(result, RESULTS)
    if publish:
        PUBLISHED.mkdir(parents=True, exist_ok=True)
        for path in written:
            shutil.copy(path, PUBLISHED / path.name)
    sys.stdout.write(written[1].read_text() + "\n" + "".join(f"wrote {p}\n" for p in written))
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
