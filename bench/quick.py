"""``make bench-quick``: the headline figures in a minute or two, each beside its raw limit.

Every figure is measured in the same run as the fastest way to do the same job without
echsd, and reported as the ratio of the two: a slow or busy machine moves both, so the
ratio says what echsd costs. Throughputs: share of the limit (higher is better); times
and CPU: multiple of the floor (lower is better). The machine is shared, so the report
says how busy it was with other work while each part ran (``bench.machine``: cores busy
with what is not ours) beside the 1-minute load average.

| figure | raw limit |
|---|---|
| deltas/s through one thread to a subscribed client, the upstream sending one HTTP chunk per SSE event as real endpoints do | the same stream from the same mock read by a bare reader (``bench.upstream``: a plain socket, deltas counted) |
| the daemon's CPU per delta there (all its threads; its event loop alone) | the bare reader's CPU per delta |
| the same deltas/s with the mock's ~64 KiB chunks (many events per chunk) | a bare reader of that stream |
| turn time: send to ``turn.completed`` at the client (a one-word reply) | the same request straight to the mock upstream |
| events/s replayed (``subscribe`` since 0) to one client (a daemon with ``join_deltas = false``: one event per delta) | a bare trio-websocket + msgpack server, one client |
| events/s live to 100 clients (the same daemon) | the bare server, fanning out to 100 clients |
| delta latency, one thread at 1 delta/ms: the mock's write to the client | a bare reader's, same pace |
| interrupt to ``turn.interrupted`` at the client, while streaming | a ``status`` round trip |
| durable event rows/s through the store writer | apsw ``executemany`` of the same rows |
| ``exec_command`` running ``true`` | ``bash -c true`` spawned bare |
| ``exec_command`` running ``true`` in a workspace-write sandbox, network off | the same command unsandboxed |
| ``echs status`` wall time, and its CPU time | ``python -c pass`` |
| restart to ready with 10,000 threads and 1M history items, and the daemon's CPU time by then | the interpreter starting and importing the daemon |

The mock upstream (``echsd mock-upstream``), ``echsd serve --provider openai --base-url``
pointed at it and the raw server each run in their own process, as in production; the
clients are lean (``wirekit.LeanConn``). Then the sweep (``bench.sweep``): N threads
stream at once to one client subscribed to ``*``, at a model's pace (1, 10 and 100
threads at 100 deltas/s each, 1,000 at 20/s) and at full speed (10 and 100 threads),
each point beside N bare readers of the same mock at the same pace: delivered/offered,
latency from the mock's write to the client p50/p99, gaps, the daemon's CPU.

Writes ``bench/results/latest.json``, ``latest.md`` and ``latest.png`` (the plot needs
matplotlib, the ``bench`` extra, which ``make bench-quick`` installs). ``--publish`` also
copies them to ``docs/bench/``, which the README links; ``--threads=1,10,100`` changes
the paced sweep, ``--no-restart`` skips the 10,000-thread restart (and its database).
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
from bench.bench_restart import measure as restart_measure
from bench.bench_store import build_database, event_throughput, raw_event_inserts
from bench.bench_wire import live, replay_once
from bench.machine import OthersMeter
from bench.sweep import Point, daemon_point, raw_point
from bench.upstream import MockUpstreamProcess, bare_read
from bench.wirekit import REPO, LeanConn, RawServer, ServeProcess, connect_lean, percentiles, raw_rate, stream_text
from echsd import logs

PACED = (1, 10, 100, 1000)
PACE_MS = {1: 10, 10: 10, 100: 10, 1000: 50}  # 100 deltas/s each; 1,000 threads at 20/s
PACED_S = 3.0  # each paced stream lasts this long
FULL_SPEED = ((10, 5_000), (100, 500))  # threads, deltas each
STREAM_DELTAS = 20_000
FAN_CLIENTS, FAN_DELTAS = 100, 1_000
REPEATS = 3
TURNS = 20
INTERRUPTS = 10
PACED_DELTAS = 1_000
ROUND_TRIPS = 200
STORE_EVENTS = 30_000
EXEC_RUNS = 30
CLI_RUNS = 5
RESTART_THREADS, RESTART_ITEMS, RESTART_RUNS = 10_000, 1_000_000, 3
RESULTS = Path(__file__).parent / "results"
PUBLISHED = REPO / "docs" / "bench"
BIN = Path(sys.executable).parent


# -- raw limits that need no daemon ---------------------------------------------------------


async def upstream_turn_times(base_url: str, turns: int) -> list[float]:
    """The one-word reply, requested from the mock with a bare reader."""
    times = []
    for _ in range(turns):
        started = time.perf_counter()
        await bare_read(base_url, 'mock: {"text": "ok"}', stamped=False)
        times.append(time.perf_counter() - started)
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


def exec_overhead(module: str = "bench_exec") -> dict[str, Any]:
    """``bench_exec`` (or ``bench_sandbox``) in its own process (it makes that process a child subreaper)."""
    code = f"import json, sys; from bench.{module} import main; sys.stdout.write(json.dumps(main(['--runs={EXEC_RUNS}'])))"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True, timeout=120)
    return json.loads(out.stdout)


def cli_env(daemon: ServeProcess) -> dict[str, str]:
    env = {k: v for k, v in daemon.env.items() if not k.startswith("PYTHONDONTWRITEBYTECODE")}
    env["NO_COLOR"] = "1"
    return env


class Collected:
    """The figures, how long each part took and how busy the machine was meanwhile."""

    def __init__(self, meter: OthersMeter) -> None:
        self.figures: list[report.Figure] = []
        self.seconds: dict[str, float] = {}
        self.machine: dict[str, dict[str, float]] = {}
        self.meter = meter
        self._mark = meter.mark()

    def lap(self, name: str) -> None:
        usage = self.meter.since(self._mark)
        self.seconds[name] = usage.seconds
        self.machine[name] = {"others_cores": usage.others_cores, "load_1min": usage.load_1min}
        self._mark = self.meter.mark()

    def add(self, *figures: report.Figure) -> None:
        """Figures measured together, since the last lap (they share its machine reading)."""
        self.figures.extend(figures)
        self.lap(figures[0].key)
        for figure in figures[1:]:
            self.machine[figure.key] = self.machine[figures[0].key]


# -- the run --------------------------------------------------------------------------------


def _median(values: list[float]) -> float:
    return statistics.median(values)


async def _single_thread(got: Collected, daemon: ServeProcess, mock: MockUpstreamProcess) -> None:
    """One thread at full speed, per-event chunks then batched, each beside a bare reader
    (interleaved, medians of ``REPEATS``)."""
    runs: dict[str, list[dict[str, Any]]] = {"event": [], "batch": [], "raw_event": [], "raw_batch": []}
    point = Point(1, STREAM_DELTAS, 0)
    for _ in range(REPEATS):
        for chunks in ("event", "batch"):
            runs[f"raw_{chunks}"].append(await raw_point(mock.base_url, point, chunks))
            runs[chunks].append(await daemon_point(daemon, point, chunks=chunks))

    def med(kind: str, *path: str) -> float:
        values = []
        for run in runs[kind]:
            value: Any = run
            for key in path:
                value = value[key]
            values.append(value)
        return _median(values)

    bare = "the same stream read by a bare reader"
    got.add(
        report.Figure("thread_deltas_per_s", "deltas/s through one thread to a subscribed client (one HTTP chunk per SSE event)", med("event", "deltas_per_s"), "deltas/s", bare, med("raw_event", "deltas_per_s")),
        report.Figure("thread_cpu_us_per_delta", "the daemon's CPU per delta there, all threads", med("event", "cpu", "us_per_delta"), "µs", "the bare reader's CPU per delta", med("raw_event", "cpu_us_per_delta"), better="lower"),
        report.Figure("thread_loop_cpu_us_per_delta", "... its event loop's (main thread) CPU per delta", med("event", "cpu", "loop_us_per_delta"), "µs", "the bare reader's CPU per delta", med("raw_event", "cpu_us_per_delta"), better="lower"),
        report.Figure("thread_deltas_per_s_batched", "deltas/s through one thread, upstream in ~64 KiB chunks", med("batch", "deltas_per_s"), "deltas/s", bare, med("raw_batch", "deltas_per_s")),
        report.Figure("thread_cpu_us_per_delta_batched", "the daemon's CPU per delta there, all threads", med("batch", "cpu", "us_per_delta"), "µs", "the bare reader's CPU per delta", med("raw_batch", "cpu_us_per_delta"), better="lower"),
    )


async def _filled_thread(daemon: ServeProcess) -> str:
    async with trio.open_nursery() as nursery:
        conn, tid = await _watched_thread(nursery, daemon, "turn.completed")
        await conn.request("thread.send", thread_id=tid, text=stream_text(STREAM_DELTAS))
        await conn.until_marked("turn.completed", 1)
        nursery.cancel_scope.cancel()
    return tid


async def _wire(got: Collected, tmp: Path, mock: MockUpstreamProcess, raw: RawServer) -> None:
    """The wire's own throughput, on a daemon of its own that sends one event per model
    delta (``join_deltas = false``): a fast reply is then as many events as deltas."""
    daemon = ServeProcess(tmp / "wire-state", base_url=mock.base_url, tuning="retained_deltas = 2000000\njoin_deltas = false")
    got.meter.add(daemon.process.pid)
    try:
        await daemon.ready()
        await _wire_figures(got, daemon, raw, await _filled_thread(daemon))
    finally:
        daemon.stop()


async def _wire_figures(got: Collected, daemon: ServeProcess, raw: RawServer, filled: str) -> None:
    raw_1, replay = [], []
    for _ in range(REPEATS):
        rate, replayed = await replay_once(daemon, filled)
        replay.append(rate)
        raw_1.append(await raw_rate(raw.path, 1, replayed))
    got.add(report.Figure("replay_events_per_s", "events/s replayed to one client", _median(replay), "events/s", "bare trio-websocket + msgpack, 1 client", _median(raw_1)))
    raw_fan = await raw_rate(raw.path, FAN_CLIENTS, FAN_DELTAS)
    fan = await live(daemon, FAN_CLIENTS, FAN_DELTAS)
    got.add(report.Figure("live_100_clients_events_per_s", "events/s live to 100 clients (one thread)", fan["events_per_s"], "events/s", "bare trio-websocket + msgpack, 100 clients", raw_fan))


async def _latency(got: Collected, daemon: ServeProcess, mock: MockUpstreamProcess) -> dict[str, float]:
    upstream_turns = await upstream_turn_times(mock.base_url, TURNS)
    daemon_turns = await turn_times(daemon, TURNS)
    got.add(report.Figure("turn_ms_p50", "turn time p50: send to turn.completed at the client", _median(daemon_turns) * 1000, "ms", "the same request straight to the mock", _median(upstream_turns) * 1000, better="lower"))
    point = Point(1, PACED_DELTAS, 1)
    raw = await raw_point(mock.base_url, point)
    paced = await daemon_point(daemon, point)
    got.add(
        report.Figure("delta_latency_paced_ms_p50", "delta latency p50, one thread at 1 delta/ms, mock to client", paced["latency"]["p50_ms"], "ms", "a bare reader's, same pace", raw["latency"]["p50_ms"], better="lower"),
        report.Figure("delta_latency_paced_ms_p99", "delta latency p99, one thread at 1 delta/ms, mock to client", paced["latency"]["p99_ms"], "ms", "a bare reader's, same pace", raw["latency"]["p99_ms"], better="lower"),
    )
    rtt = percentiles(await status_round_trips(daemon, ROUND_TRIPS))
    interrupts = percentiles(await interrupt_latencies(daemon, INTERRUPTS))
    got.add(report.Figure("interrupt_ms_p50", "interrupt to turn.interrupted at the client, p50", interrupts["p50_ms"], "ms", "status round trip p50", rtt["p50_ms"], better="lower"))
    return rtt


async def _sweep(got: Collected, daemon: ServeProcess, mock: MockUpstreamProcess, paced: tuple[int, ...]) -> list[dict[str, Any]]:
    """Paced points, then full-speed ones; each daemon point right after its raw one."""
    points = [Point(n, round(PACED_S * 1000 / PACE_MS.get(n, 10)), PACE_MS.get(n, 10)) for n in paced]
    points += [Point(n, each, 0) for n, each in FULL_SPEED]
    rows = []
    for point in points:
        raw = await raw_point(mock.base_url, point)
        row = await daemon_point(daemon, point, got.meter)
        row["raw"] = raw
        rows.append(row)
    got.lap("sweep")
    return rows


async def _echs_status(got: Collected, daemon: ServeProcess) -> None:
    env = cli_env(daemon)
    echs_status = [str(BIN / "echs"), "status"]
    await trio.to_thread.run_sync(timed, echs_status, env, 1)  # warm-up: byte-code cache
    echs = await trio.to_thread.run_sync(timed, echs_status, env, CLI_RUNS)
    python = await trio.to_thread.run_sync(timed, [sys.executable, "-c", "pass"], env, CLI_RUNS)
    got.add(
        report.Figure("echs_status_ms", "echs status wall time (median)", echs["median_ms"], "ms", "python -c pass", python["median_ms"], better="lower"),
        report.Figure("echs_status_cpu_ms", "... its CPU time, user + system (what load moves least)", echs["cpu_median_ms"], "ms", "python -c pass", python["cpu_median_ms"], better="lower"),
    )


def _restart(got: Collected, tmp: Path) -> None:
    """Restart to ready on a database of ``RESTART_THREADS`` threads, ``RESTART_ITEMS`` items."""
    state = tmp / "restart" / "state"
    build_database(state / "echsd.db", RESTART_THREADS, RESTART_ITEMS, 5)
    got.lap("restart_build")
    measured = restart_measure(state, RESTART_THREADS, RESTART_RUNS)
    what = f"restart to ready with {RESTART_THREADS:,} threads, {RESTART_ITEMS / 1e6:g}M items (median of {RESTART_RUNS})"
    got.add(
        report.Figure("restart_to_ready_ms", what, measured["restart_to_ready_s_median"] * 1000, "ms", "python start + importing the daemon", measured["raw_python_start_and_imports_s_median"] * 1000, better="lower"),
        report.Figure("restart_cpu_ms", "... the daemon's CPU time by then, all threads", measured["restart_cpu_s_median"] * 1000, "ms", "the same imports' CPU time", measured["raw_python_start_and_imports_cpu_s_median"] * 1000, better="lower"),
    )


async def _store(got: Collected, tmp: Path) -> None:
    store = await event_throughput(tmp / "store" / "echsd.db", STORE_EVENTS)
    raw = raw_event_inserts(tmp / "raw-store" / "echsd.db", STORE_EVENTS)
    got.add(report.Figure("store_events_per_s", "durable event rows/s through the store writer", store["durable_events_per_s"], "rows/s", "apsw executemany, 1,000 rows a transaction", raw["events_per_s"]))


def _exec(got: Collected) -> None:
    result = exec_overhead()
    mechanism = next((k[5:-7] for k in result if k.startswith("exec_") and k.endswith("_p50_ms")), None)
    if mechanism is not None:
        got.add(report.Figure("exec_true_ms_p50", f"exec_command true p50 ({mechanism} containment)", result[f"exec_{mechanism}_p50_ms"], "ms", "bash -c true spawned bare", result["bare_bash_true_p50_ms"], better="lower"))
    sandboxed = exec_overhead("bench_sandbox")
    if sandboxed.get("landlock_abi"):
        got.add(report.Figure("exec_sandboxed_ms_p50", "exec_command true p50, workspace-write sandbox, network off (target: at most 2x)", sandboxed["workspace_write_net_off_p50_ms"], "ms", "the same, unsandboxed", sandboxed["unsandboxed_p50_ms"], better="lower"))


async def run(paced: tuple[int, ...], restart: bool) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-quick-") as tmp:
        raw = RawServer(f"{tmp}/raw.sock")
        mock = MockUpstreamProcess()
        daemon = ServeProcess(Path(tmp) / "state", base_url=mock.base_url)
        got = Collected(OthersMeter([raw.process.pid, mock.pid, daemon.process.pid]))
        try:
            await daemon.ready()
            got.lap("start")
            await _single_thread(got, daemon, mock)
            await _wire(got, Path(tmp), mock, raw)
            raw.stop()
            extra["status_round_trip"] = await _latency(got, daemon, mock)
            extra["sweep"] = await _sweep(got, daemon, mock, paced)
            await _echs_status(got, daemon)
        finally:
            extra["graceful_stop_s"] = round(daemon.stop(), 3)
            mock.stop()
            raw.stop()
        await _store(got, Path(tmp))
        if restart:
            await trio.to_thread.run_sync(_restart, got, Path(tmp))
    _exec(got)
    return {"figures": got.figures, **extra, "stage_s": got.seconds, "stage_machine": got.machine}


def _options(argv: list[str]) -> tuple[tuple[int, ...], bool, bool]:
    paced = PACED
    for arg in argv:
        if arg.startswith("--threads="):
            paced = tuple(int(n) for n in arg.split("=", 1)[1].split(","))
        elif arg not in ("--publish", "--no-restart"):
            raise SystemExit(f"unknown option {arg!r}; known: --threads=1,10,100 --no-restart --publish")
    return paced, "--publish" in argv, "--no-restart" not in argv


def main(argv: list[str]) -> dict[str, Any]:
    paced, publish, restart = _options(argv)
    logs.configure(level="warning")  # the store runs in this process for its figure
    started = time.perf_counter()
    load_before = os.getloadavg()[0]
    measured = trio.run(run, paced, restart)
    stages = measured["stage_machine"].values()
    machine = {
        "cpus": os.cpu_count(),
        "load_1min_before": round(load_before, 2),
        "load_1min_after": round(os.getloadavg()[0], 2),
        "others_cores_mean": round(statistics.fmean(s["others_cores"] for s in stages), 2),
        "others_cores_max": max(s["others_cores"] for s in stages),
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
