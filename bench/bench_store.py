"""Store benchmarks: durable event throughput (SQLite and PostgreSQL), startup metadata load.

1. One trio task submits one ``Unit`` per ``turn.delta`` event as fast as it can
   (``await writer.put``); we report how fast it submits, how fast events become durable
   (submit start to ``flush``), batch sizes, and publish latency (event creation to
   ``on_commit``). Target: >= 40,000 durable events/s without slowing the submitter.
   Flat out is overload by design (the queue grows to ``max_pending``), so the same run
   paced at 40,000 events/s shows the publish latency at the target load. The raw limit
   beside it: the same rows by plain apsw ``executemany``, 1,000 per transaction.
2. A database with 10,000 threads and 1,000,000 history items (plus a small event log per
   thread) is built once in a temp dir (build time reported apart), then we time
   ``Store.open`` + ``load_threads`` (target: well under 2 s), and ``last_seqs``.
3. Part 1 again on PostgreSQL: a throwaway cluster started for the run (``initdb`` and
   ``pg_ctl`` from ``/usr/lib/postgresql/15/bin``, unix socket, default durability:
   fsync on, ``synchronous_commit=on``, so every commit waits for its WAL flush; SQLite's
   ``synchronous=NORMAL`` in WAL mode is durable against a process crash, not a power
   cut). Skipped, with the reason, where the binaries are missing.

Options: ``--events=N``, ``--threads=N``, ``--items=N``, ``--quick`` (small sizes),
``--no-postgresql``.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
import trio

from echsd import logs
from echsd.events import Event
from echsd.store import Unit, open_store, queries
from echsd.store.sqlite.connection import INSERT_EVENT, open_writer
from echsd.store.sqlite.schema import migrate


def _options(argv: list[str]) -> dict[str, int]:
    opts = {"events": 300_000, "threads": 10_000, "items": 1_000_000, "events_per_thread": 20}
    for arg in argv:
        if arg == "--quick":
            opts.update(events=50_000, threads=1_000, items=100_000)
        elif arg.startswith("--") and "=" in arg:
            key, value = arg[2:].split("=", 1)
            if key.replace("-", "_") in opts:
                opts[key.replace("-", "_")] = int(value)
    return opts


# -- 1. durable event throughput ------------------------------------------------------------


async def event_throughput(target: Path | str, n: int, rate: int | None = None) -> dict[str, Any]:
    """Submit ``n`` delta events, flat out, or paced at ``rate`` events/s."""
    store = open_store(target)
    latencies: list[float] = []
    published = 0

    def on_commit(events: list[Event]) -> None:
        nonlocal published
        published += len(events)
        latencies.append(time.time() - events[0].ts)  # the oldest event of the batch

    store.writer.set_on_commit(on_commit)
    tid = "thr_00000000000000b1"
    async with trio.open_nursery() as nursery:
        await nursery.start(store.writer.run)
        put = store.writer.put
        started = time.perf_counter()
        for seq in range(1, n + 1):
            if rate is not None and seq % 200 == 0:  # pace in 5 ms steps at 40k/s
                ahead = started + seq / rate - time.perf_counter()
                await trio.sleep(max(0.0, ahead))
            data = {"turn_id": "turn_0000000000000001", "item_id": "msg_1", "delta": "token "}
            await put(Unit(events=[Event(tid, seq, "turn.delta", time.time(), data)]))
        submitted = time.perf_counter()
        await store.writer.flush()
        durable = time.perf_counter()
        stats = store.writer.stats
        await store.writer.aclose()
    stored = store.read_sync(lambda c: queries.count_events(c, tid))
    store.close()
    assert stored == n == published, (stored, n, published)
    latencies.sort()
    return {
        "events": n,
        "paced_at_events_per_s": rate,
        "durable_events_per_s": round(n / (durable - started)),
        "submitter_events_per_s": round(n / (submitted - started)),
        "target_events_per_s": 40_000,
        "transactions": stats.transactions,
        "mean_batch": round(n / max(stats.transactions, 1)),
        "largest_batch": stats.largest_batch,
        "publish_latency_ms_p50": round(statistics.median(latencies) * 1000, 1),
        "publish_latency_ms_max": round(latencies[-1] * 1000, 1),
    }


def raw_event_inserts(path: Path, n: int, batch: int = 1000) -> dict[str, Any]:
    """The raw limit: the same rows, pre-encoded, by apsw ``executemany`` in transactions of
    ``batch`` on a database opened as the store opens it (same schema and pragmas)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = open_writer(path)
    migrate(conn, str(path))
    tid = "thr_00000000000000b3"
    data = orjson.dumps({"turn_id": "turn_0000000000000001", "item_id": "msg_1", "delta": "token "})
    started = time.perf_counter()
    for first in range(1, n + 1, batch):
        rows = [(tid, seq, "turn.delta", time.time(), data) for seq in range(first, min(first + batch, n + 1))]
        with conn.transaction():
            conn.executemany(INSERT_EVENT, rows)
    elapsed = time.perf_counter() - started
    conn.close()
    return {"events": n, "batch": batch, "events_per_s": round(n / elapsed)}


async def _submitter_alone(path: Path, n: int) -> dict[str, Any]:
    """Baseline: the same submit loop with the writer not yet running, then the drain."""
    store = open_store(path, max_pending=n + 1)
    tid = "thr_00000000000000b2"
    put = store.writer.put
    started = time.perf_counter()
    for seq in range(1, n + 1):
        data = {"turn_id": "turn_0000000000000001", "item_id": "msg_1", "delta": "token "}
        await put(Unit(events=[Event(tid, seq, "turn.delta", time.time(), data)]))
    submitted = time.perf_counter()
    async with trio.open_nursery() as nursery:
        await nursery.start(store.writer.run)
        await store.writer.flush()
        drained = time.perf_counter()
        await store.writer.aclose()
    store.close()
    return {
        "events": n,
        "submitter_alone_events_per_s": round(n / (submitted - started)),
        "backlog_drain_events_per_s": round(n / (drained - submitted)),
    }


# -- 2. startup load ------------------------------------------------------------------------


def build_database(path: Path, threads: int, items: int, events_per_thread: int) -> None:
    """Fill a database directly (not via the writer): we are timing the load, not this."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = open_writer(path)
    migrate(conn, str(path))
    per_thread = items // threads
    config = orjson.dumps(
        {
            "model": "gpt-5",
            "cwd": "/home/u/src",
            "reasoning": "medium",
            "instructions": "be brief",
            "tools": ["exec_command", "apply_patch"],
        }
    ).decode()
    usage = orjson.dumps(
        {"input_tokens": 12345, "cached_tokens": 1000, "output_tokens": 999, "reasoning_tokens": 10}
    ).decode()
    for t in range(threads):
        tid = f"thr_{t:016x}"
        parent = None if t % 10 == 0 else f"thr_{t - t % 10:016x}"
        items_rows = [
            (tid, pos, _item_json(tid, pos), f"turn_{pos // 10:016x}") for pos in range(per_thread)
        ]
        event_rows = [
            (tid, seq, 1e9 + seq, b'{"turn_id":"turn_1"}')
            for seq in range(1, events_per_thread + 1)
        ]
        with conn.transaction():
            conn.execute(
                "INSERT INTO threads(thread_id, parent, created_at, state, config, usage, extra, updated_at) VALUES(?, ?, ?, 'idle', ?, ?, '{}', ?)",
                (tid, parent, 1e9 + t, config, usage, 1e9 + t),
            )
            conn.executemany("INSERT INTO items(thread_id, pos, item, turn_id) VALUES(?, ?, ?, ?)", items_rows)
            conn.executemany("INSERT INTO events(thread_id, seq, type, ts, data) VALUES(?, ?, 'item.completed', ?, ?)", event_rows)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def _item_json(tid: str, pos: int) -> str:
    text = f"item {pos} of {tid} " + "lorem ipsum " * 8
    item = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text}],
    }
    return orjson.dumps(item).decode()


def _startup_load(path: Path, opts: dict[str, int]) -> dict[str, Any]:
    started = time.perf_counter()
    build_database(path, opts["threads"], opts["items"], opts["events_per_thread"])
    built = time.perf_counter()
    store = open_store(path)
    opened = time.perf_counter()
    threads = store.read_sync(queries.load_threads)
    loaded = time.perf_counter()
    seqs = store.read_sync(queries.last_seqs)
    seqs_done = time.perf_counter()
    history = store.read_sync(lambda c: queries.load_items(c, threads[-1].thread_id))
    one_history = time.perf_counter()
    store.close()
    assert len(threads) == opts["threads"] and len(seqs) == opts["threads"]
    return {
        "threads": opts["threads"],
        "items": opts["items"],
        "db_mb": round(path.stat().st_size / 2**20),
        "build_s": round(built - started, 2),
        "open_s": round(opened - built, 4),
        "load_threads_s": round(loaded - opened, 4),
        "open_plus_load_threads_s": round(loaded - built, 4),
        "target_s": 2.0,
        "last_seqs_all_threads_s": round(seqs_done - loaded, 4),
        "load_one_history_s": round(one_history - seqs_done, 4),
        "one_history_items": len(history),
    }


def _postgresql(opts: dict[str, int]) -> dict[str, Any]:
    """Part 1 on a throwaway PostgreSQL cluster with default (full) durability."""
    from tests.pgcluster import TempCluster, missing_reason

    reason = missing_reason()
    if reason:
        return {"skipped": reason}
    cluster = TempCluster(durable=True).start()
    try:
        flat_out = trio.run(event_throughput, cluster.create_database("bench_flat"), opts["events"])
        paced = trio.run(event_throughput, cluster.create_database("bench_paced"), opts["events"], 40_000)
    finally:
        cluster.stop()
    return {"event_throughput": flat_out, "event_latency_at_40k": paced}


def main(argv: list[str]) -> dict[str, Any]:
    opts = _options(argv)
    logs.configure(level="warning")  # the store runs in this process
    with tempfile.TemporaryDirectory(prefix="echsd-bench-") as tmp:
        root = Path(tmp)
        flat_out = trio.run(event_throughput, root / "flat" / "echsd.db", opts["events"])
        paced = trio.run(event_throughput, root / "paced" / "echsd.db", opts["events"], 40_000)
        alone = trio.run(_submitter_alone, root / "alone" / "echsd.db", opts["events"])
        startup = _startup_load(root / "startup" / "echsd.db", opts)
    with tempfile.TemporaryDirectory(prefix="echsd-bench-") as tmp:
        raw = raw_event_inserts(Path(tmp) / "raw" / "echsd.db", opts["events"])
    flat_out["raw_inserts_events_per_s"] = raw["events_per_s"]
    flat_out["vs_raw_inserts"] = round(flat_out["durable_events_per_s"] / raw["events_per_s"], 3)
    results = {
        "event_throughput": flat_out,
        "event_latency_at_40k": paced,
        "submitter_baseline": alone,
        "startup_load": startup,
    }
    if "--no-postgresql" not in argv:
        results["postgresql"] = _postgresql(opts)
    return results


if __name__ == "__main__":
    import json
    import sys

    sys.stdout.write(json.dumps(main(sys.argv[1:]), indent=2) + "\n")
