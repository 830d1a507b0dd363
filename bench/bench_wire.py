"""Wire protocol throughput and latency, next to the raw trio-websocket + msgpack limit.

Everything runs over real unix sockets with the server in its own process, as in
production: ``echsd serve --provider mock`` (the built-in scripted model streams
``{"repeat": ...}`` deltas at full speed), and for the raw limit a bare trio-websocket
server (``raw_server`` below) that sends pre-encoded events in batches of 32, the most a
server can do per frame. The clients here are lean (decode every frame, count, time).

Measured:
- ``raw_*``: events/s the bare server delivers to 1 client and to 100 clients (fan-out:
  every client gets every event; the sum is reported).
- ``live_*``: events/s the daemon delivers while one thread streams; to 1 client and to
  100 clients subscribed to that thread. The producer (upstream SSE -> turn loop -> store
  commit) is usually the limit for one client, so ``replay_1_client`` (subscribe with
  ``since=0`` to a stored stream) shows what the wire path alone sustains.
- latency: from an event's ``ts`` (stamped when the turn loop takes the delta from the
  upstream stream) to its arrival at the client, p50/p99, with one thread streaming at
  full speed, one thread paced at 1 delta/ms; and 1,000 threads streaming at once
  (``bench.sweep``: from the mock's write to the client).

``main(["--quick"])`` uses smaller counts.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

from bench.sweep import Point, daemon_point
from bench.wirekit import RawServer, ServeProcess, connect_lean, percentiles, raw_rate, settled, stream_text

REPEATS = 5


async def live(daemon: ServeProcess, clients: int, deltas: int) -> dict[str, Any]:
    async with trio.open_nursery() as nursery:
        control = await connect_lean(nursery, daemon)
        tid = (await control.request("thread.create", cwd=str(daemon.state)))["thread_id"]
        conns = [await connect_lean(nursery, daemon) for _ in range(clients)]
        for conn in conns:
            conn.latencies = [] if clients == 1 else None
            await conn.request("subscribe", thread_id=tid)
        started = time.perf_counter()
        await control.request("thread.send", thread_id=tid, text=stream_text(deltas))
        last_seqs = await settled(control, [tid])
        for conn in conns:
            await conn.until_covered(last_seqs)
        elapsed = max(c.last for c in conns) - started
        total = sum(c.events for c in conns)
        result = {"thread_id": tid, "events_per_s": round(total / elapsed), "events": total, "gaps": sum(c.gaps for c in conns), "seconds": round(elapsed, 3), "failed_turns": conns[0].failed}
        if clients == 1:
            deltas_seen = len(conns[0].latencies or [])
            result["deltas_per_s"] = round(deltas_seen / (conns[0].last_delta - conns[0].first_delta))  # first to last delta
            result["latency_full_speed"] = percentiles(conns[0].latencies or [])
        nursery.cancel_scope.cancel()
    return result


async def filled_thread(daemon: ServeProcess, deltas: int) -> str:
    """A new thread that has streamed ``deltas`` deltas (and is idle again)."""
    async with trio.open_nursery() as nursery:
        control = await connect_lean(nursery, daemon)
        tid = (await control.request("thread.create", cwd=str(daemon.state)))["thread_id"]
        await control.request("thread.send", thread_id=tid, text=stream_text(deltas))
        await settled(control, [tid])
        nursery.cancel_scope.cancel()
    return tid


async def replay_once(daemon: ServeProcess, tid: str) -> tuple[float, int]:
    """(events/s, events) of one ``subscribe`` since 0 on a fresh connection."""
    async with trio.open_nursery() as nursery:
        reader = await connect_lean(nursery, daemon)
        started = time.perf_counter()
        answer = await reader.request("subscribe", thread_id=tid, since=0)
        elapsed = time.perf_counter() - started
        nursery.cancel_scope.cancel()
    return answer["replayed"] / elapsed, answer["replayed"]


async def paced_latency(daemon: ServeProcess, tid: str, deltas: int) -> dict[str, float]:
    """Delta latency percentiles while ``tid`` streams ``deltas`` deltas 1 ms apart."""
    async with trio.open_nursery() as nursery:
        reader = await connect_lean(nursery, daemon)
        await reader.request("subscribe", thread_id=tid)
        reader.latencies = []
        await reader.request("thread.send", thread_id=tid, text=stream_text(deltas, delay_ms=1))
        await reader.until_covered(await settled(reader, [tid]))
        nursery.cancel_scope.cancel()
    return percentiles(reader.latencies)


async def replay_and_paced(daemon: ServeProcess, deltas: int, paced: int, repeats: int = REPEATS) -> dict[str, Any]:
    tid = await filled_thread(daemon, deltas)
    runs = [await replay_once(daemon, tid) for _ in range(repeats)]
    rates = [rate for rate, _ in runs]
    return {
        "replay_events_per_s": round(statistics.median(rates)),
        "replay_runs": [round(r) for r in rates],
        "replayed": runs[-1][1],
        "latency_paced_1ms": await paced_latency(daemon, tid, paced),
    }


async def _run(quick: bool) -> dict[str, Any]:
    n = 100_000 if quick else 400_000
    fan = 5_000 if quick else 20_000
    deltas = 50_000 if quick else 200_000
    threads, per_thread = (200, 20) if quick else (1000, 50)
    out: dict[str, Any] = {"quick": quick}
    with tempfile.TemporaryDirectory(prefix="bench-wire-") as tmp:
        raw = RawServer(f"{tmp}/raw.sock")
        try:
            # This VM's speed swings run to run: the ratio targets compare medians of 5.
            out["raw_1_client_runs"] = [round(await raw_rate(raw.path, 1, n)) for _ in range(REPEATS)]
            out["raw_1_client_events_per_s"] = round(statistics.median(out["raw_1_client_runs"]))
            out["raw_100_clients_events_per_s"] = round(await raw_rate(raw.path, 100, fan))
        finally:
            raw.stop()

        daemon = ServeProcess(Path(tmp) / "state")
        try:
            await daemon.ready()
            out["live_1_client"] = await live(daemon, 1, deltas)
            out["live_100_clients"] = await live(daemon, 100, fan)
            out.update(await replay_and_paced(daemon, deltas, 2000))
            out["many_threads"] = await daemon_point(daemon, Point(threads, per_thread, 0))
        finally:
            daemon.stop()
    out["live_1_client_vs_raw"] = round(out["live_1_client"]["events_per_s"] / out["raw_1_client_events_per_s"], 3)
    out["replay_1_client_vs_raw"] = round(out["replay_events_per_s"] / out["raw_1_client_events_per_s"], 3)
    out["live_100_clients_vs_raw"] = round(out["live_100_clients"]["events_per_s"] / out["raw_100_clients_events_per_s"], 3)
    return out


def main(argv: list[str]) -> dict[str, Any]:
    return trio.run(_run, "--quick" in argv)


if __name__ == "__main__":
    sys.stdout.write(json.dumps(main(sys.argv[1:]), indent=2) + "\n")
