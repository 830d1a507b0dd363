"""The concurrent sweep: N threads stream at once, one client subscribed to ``*``; beside
each point, N bare readers of the same mock at the same pace (``bench.upstream``).

Every delta is time-stamped by the mock when it is written, so latency runs from the
upstream's write to the arrival at the client (through HTTP, SSE decoding, the turn loop,
the store's commit and the wire), and the bare readers' latency is the same measure
without echsd.

Per point:
- offered: N x the pace (paced points); at full speed there is no offer, only what comes.
- delivered: paced, the deltas that arrived per second in the window where every stream
  was running (from the last stream's first stamp to the first stream's last stamp), so
  a daemon that falls behind shows its throughput, not the offer; at full speed, all
  deltas over first to last arrival.
- latency p50/p99 (every delta), gaps (``events.gap`` the client got), and the daemon's
  CPU over the point: cores used and microseconds per delta, all threads and its event
  loop (main thread) alone.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import trio

from bench.machine import OthersMeter, cpu_s
from bench.upstream import BareStream, bare_readers, script
from bench.wirekit import TERMINAL, LeanConn, ServeProcess, connect_lean, percentiles, settled

MIN_WINDOW_S = 0.3  # a shorter window where all streams overlap is no steady state


@dataclass(frozen=True)
class Point:
    threads: int
    deltas_each: int
    delay_ms: float  # 0: full speed

    @property
    def offered(self) -> int:
        return round(self.threads * 1000 / self.delay_ms) if self.delay_ms else 0

    def to_json(self) -> dict[str, Any]:
        return {"threads": self.threads, "deltas_each": self.deltas_each, "delay_ms": self.delay_ms, "offered_deltas_per_s": self.offered}


def delivery(point: Point, arrivals: list[tuple[float, float]], spans: list[tuple[float, float]]) -> dict[str, Any]:
    """Delivered deltas/s (see the module), delivered/offered and latency percentiles, from
    (stamp, arrival) pairs and each stream's (first stamp, last stamp)."""
    result: dict[str, Any] = {"deltas": len(arrivals), "latency": percentiles([a - s for s, a in arrivals])}
    if not arrivals:
        return {**result, "deltas_per_s": 0, "delivered_share": 0.0}
    start, end = max(first for first, _ in spans), min(last for _, last in spans)
    if point.delay_ms and end - start >= MIN_WINDOW_S:
        inside = sum(1 for _, arrived in arrivals if start <= arrived <= end)
        rate = inside / (end - start)
        result["window_s"] = round(end - start, 2)
    else:
        times = [a for _, a in arrivals]
        rate = len(arrivals) / max(max(times) - min(times), 1e-6)
    result["deltas_per_s"] = round(rate)
    result["delivered_share"] = round(rate / point.offered, 3) if point.offered else None
    return result


async def _create(senders: list[LeanConn], count: int, cwd: str) -> list[str]:
    ids: list[str] = []

    async def create(conn: LeanConn, many: int) -> None:
        for _ in range(many):
            ids.append((await conn.request("thread.create", cwd=cwd))["thread_id"])

    async with trio.open_nursery() as nursery:
        for index, conn in enumerate(senders):
            nursery.start_soon(create, conn, count // len(senders) + (index < count % len(senders)))
    return ids


async def daemon_point(daemon: ServeProcess, point: Point, meter: OthersMeter | None = None, chunks: str = "event") -> dict[str, Any]:
    """``point.threads`` threads stream ``point.deltas_each`` stamped deltas each, at once;
    one client on ``*`` counts and times them."""
    text = script(point.deltas_each, point.delay_ms, chunks=chunks)
    connections = max(1, point.threads // 100)  # a connection's requests are served in turn
    pid = daemon.process.pid
    async with trio.open_nursery() as nursery:
        senders = [await connect_lean(nursery, daemon) for _ in range(connections)]
        ids = await _create(senders, point.threads, str(daemon.state))
        watcher = await connect_lean(nursery, daemon)
        watcher.stamped = True
        watcher.marked = set(TERMINAL)
        await watcher.request("subscribe", thread_id="*")
        others = meter.mark() if meter else None
        cpu, loop_cpu, started = cpu_s(pid), cpu_s(pid, pid), time.perf_counter()
        async with trio.open_nursery() as sending:
            for index, tid in enumerate(ids):
                conn = senders[index % connections]
                sending.start_soon(lambda c=conn, t=tid: c.request("thread.send", thread_id=t, text=text))
        await watcher.until_ended(len(ids))  # no polling: the daemon's CPU is the streams'
        if watcher.gaps:  # an end may be in a gap: ask the daemon
            await watcher.until_covered(await settled(senders[0], ids))
        cpu, loop_cpu, wall = cpu_s(pid) - cpu, cpu_s(pid, pid) - loop_cpu, time.perf_counter() - started
        nursery.cancel_scope.cancel()
    delivered = delivery(point, watcher.arrivals, [(a, b) for a, b in watcher.spans.values()])
    deltas = max(watcher.deltas, 1)
    result = {
        **point.to_json(),
        **delivered,
        "gaps": watcher.gaps,
        "failed_turns": watcher.failed,
        "events": watcher.events,
        "cpu": {"cores": round(cpu / wall, 2), "us_per_delta": round(cpu / deltas * 1e6, 1), "loop_cores": round(loop_cpu / wall, 2), "loop_us_per_delta": round(loop_cpu / deltas * 1e6, 1)},
    }
    if others is not None and meter is not None:
        result["machine"] = vars(meter.since(others))
    assert watcher.deltas == point.threads * point.deltas_each or watcher.gaps, (watcher.deltas, point)
    return result


async def raw_point(base_url: str, point: Point, chunks: str = "event") -> dict[str, Any]:
    """The same streams read by ``point.threads`` bare readers at once (in this process:
    its CPU time over the point is theirs)."""
    cpu = time.process_time()
    streams: list[BareStream] = await bare_readers(base_url, point.threads, script(point.deltas_each, point.delay_ms, chunks=chunks))
    cpu = time.process_time() - cpu
    arrivals = [pair for stream in streams for pair in stream.arrivals]
    spans = [(s.arrivals[0][0], s.arrivals[-1][0]) for s in streams if s.arrivals]
    deltas = sum(s.deltas for s in streams)
    assert deltas == point.threads * point.deltas_each, (deltas, point)
    return {**delivery(point, arrivals, spans), "cpu_us_per_delta": round(cpu / deltas * 1e6, 2)}
