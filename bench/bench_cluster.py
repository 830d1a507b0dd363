"""Several daemons over PostgreSQL, measured from outside with real ``echsd serve`` processes.

- ``one_thread``: durable deltas/s and delta latency (event ``ts`` to arrival at a client on
  the same node) through one streaming thread, on SQLite and on PostgreSQL.
- ``cross_node``: the thread runs on node A and a client on node B watches it (deltas paced at
  one per millisecond): delivery latency p50/p99, beside a client on A at the same time.
- ``failover``: SIGKILL of the node running a thread until the other node has adopted it
  (its ``thread.get`` names the new node), with ``lease_s`` given.

Needs PostgreSQL's binaries (``/usr/lib/postgresql/15/bin``); a throwaway cluster is started
in a temporary directory. ``main(["--quick"])`` uses smaller counts.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import trio

from echsd.wire.client import connect

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests.pgcluster: the throwaway PostgreSQL the tests use too

WAIT_S = 120.0


def _percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    if not ordered:
        return {"p50_ms": float("nan"), "p99_ms": float("nan"), "samples": 0}
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 2),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 2),
        "samples": len(ordered),
    }


class Node:
    """``echsd serve --provider mock`` on its own state dir, with ``store`` and ``node_id``."""

    def __init__(self, root: Path, node_id: str, store: str | None, lease_s: float = 10.0) -> None:
        self.state = root / node_id
        self.state.mkdir(parents=True)
        (self.state / "config.toml").write_text(f"[tuning]\nlease_s = {lease_s}\nretained_deltas = 2000000\n")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ECHS_", "OPENAI_"))}
        env.update(HOME=str(root), CODEX_HOME=str(root / "none"), ECHS_LOG_LEVEL="info")
        command = [sys.executable, "-c", "from echsd.cli.echsd_main import main; main()", "serve", "--provider", "mock", "--state-dir", str(self.state), "--node-id", node_id]
        if store is not None:
            command += ["--store", store]
        self.process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self._ready = threading.Event()
        threading.Thread(target=self._drain, daemon=True).start()
        if not self._ready.wait(60):
            self.stop()
            raise RuntimeError(f"node {node_id} did not start")

    def _drain(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            if "echsd ready" in line:
                self._ready.set()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(30)


async def _watch(client: Any, thread_id: str, samples: list[float], done: trio.Event) -> int:
    """Latency of every delta (arrival minus the event's ts) until the turn ends."""
    count = 0
    async with client.events(thread_id, since=0) as stream:
        async for event in stream:
            if event["event"] == "turn.delta":
                samples.append(time.time() - event["ts"])
                count += 1
            elif event["event"] in ("turn.completed", "turn.interrupted", "turn.error"):
                done.set()
                return count
    return count


async def _stream_once(send_to: Any, watchers: list[Any], deltas: int, delay_ms: float) -> tuple[float, list[list[float]]]:
    thread_id = (await send_to.request("thread.create", {}))["thread_id"]
    samples: list[list[float]] = [[] for _ in watchers]
    done = [trio.Event() for _ in watchers]
    directive = {"repeat": {"chunk": "x", "count": deltas}} if not delay_ms else {"text": "x" * deltas, "deltas": deltas, "delay_ms": delay_ms}
    import json

    async with trio.open_nursery() as nursery:
        for watcher, into, finished in zip(watchers, samples, done):
            nursery.start_soon(_watch, watcher, thread_id, into, finished)
        await trio.sleep(0.2)  # let the subscriptions register (a benchmark, not a test)
        started = time.perf_counter()
        await send_to.request("thread.send", {"thread_id": thread_id, "text": "mock: " + json.dumps(directive)})
        with trio.fail_after(WAIT_S):
            for finished in done:
                await finished.wait()
        elapsed = time.perf_counter() - started
    return elapsed, samples


async def _one_thread(store: str | None, root: Path, deltas: int) -> dict[str, Any]:
    node = Node(root, "solo", store)
    try:
        async with connect(state_dir=node.state) as client:
            elapsed, (samples,) = await _stream_once(client, [client], deltas, 0)
        return {"deltas": len(samples), "deltas_per_s": round(len(samples) / elapsed), "latency": _percentiles(samples)}
    finally:
        node.stop()


async def _cross_node(url: str, root: Path, deltas: int) -> dict[str, Any]:
    a, b = Node(root, "node-a", url), Node(root, "node-b", url)
    try:
        async with connect(state_dir=a.state) as on_a, connect(state_dir=b.state) as on_b:
            _elapsed, (local, remote) = await _stream_once(on_a, [on_a, on_b], deltas, 1.0)
        return {"deltas": deltas, "client_on_owner": _percentiles(local), "client_on_other_node": _percentiles(remote)}
    finally:
        a.stop()
        b.stop()


async def _failover(url: str, root: Path, lease_s: float) -> dict[str, Any]:
    a, b = Node(root, "node-a", url, lease_s), Node(root, "node-b", url, lease_s)
    try:
        async with connect(state_dir=a.state) as on_a:
            thread_id = (await on_a.request("thread.create", {}))["thread_id"]
        async with connect(state_dir=b.state) as on_b:
            a.stop()  # SIGKILL
            killed = time.monotonic()
            with trio.fail_after(WAIT_S):
                while (await on_b.request("thread.get", {"thread_id": thread_id}))["node"] != "node-b":
                    await trio.sleep(0.02)
            adopted_s = time.monotonic() - killed
        return {"lease_s": lease_s, "adopted_after_s": round(adopted_s, 2)}
    finally:
        a.stop()
        b.stop()


def main(argv: list[str]) -> dict[str, Any]:
    from tests.pgcluster import TempCluster, missing_reason

    quick = "--quick" in argv
    deltas = 5_000 if quick else 50_000
    paced = 1_000 if quick else 5_000
    reason = missing_reason()
    if reason:
        return {"skipped": reason}
    cluster = TempCluster(durable=True).start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            result: dict[str, Any] = {
                "one_thread": {
                    "sqlite": trio.run(_one_thread, None, root / "sqlite", deltas),
                    "postgresql": trio.run(_one_thread, cluster.create_database("echs_bench_one"), root / "pg", deltas),
                },
                "cross_node": trio.run(_cross_node, cluster.create_database("echs_bench_cross"), root / "cross", paced),
                "failover": [trio.run(_failover, cluster.create_database(f"echs_bench_fail{i}"), root / f"fail{i}", lease) for i, lease in enumerate((2.0, 10.0))],
            }
    finally:
        cluster.stop()
    return result


if __name__ == "__main__":
    import json

    print(json.dumps(main(sys.argv[1:]), indent=2))
