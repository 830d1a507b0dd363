"""Blackboard benchmarks: compare-and-set writes per second, and watch latency.

1. In process (the daemon's ``Blackboard`` on a real SQLite store, its writer running):
   ``cas_*``: writers each update their own key with ``if_version`` (read the version,
   write if unchanged; every write is durable before it is acknowledged), 1 writer and 64
   at once (group commit); ``hot_key``: 16 writers racing on one key, where most lose with
   ``conflict`` (successes/s and conflicts/s).
2. ``wait_latency``: from the start of a write to the moment a task waiting in
   ``Blackboard.wait`` (what ``blackboard_wait`` calls) returns with it, p50/p99.
3. Through the wire, against ``echsd serve --provider mock`` in its own process:
   ``wire_cas``: 16 connections writing with ``if_version`` (one round trip per write);
   ``watch_latency``: from a client's write to the moment another client subscribed with
   ``subscribe {blackboard: PREFIX}`` (``client.blackboard_events``) sees the change, one
   write at a time (ping-pong, so this is latency, not a queue), p50/p99.

``--quick`` runs smaller counts; ``--no-wire`` skips part 3.
"""

from __future__ import annotations

import json
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
import trio.testing

from echsd.blackboard.board import Blackboard
from echsd.errors import Conflict
from echsd.store import open_store


STAGE_TIMEOUT_S = 300


def _options(argv: list[str]) -> dict[str, int]:
    quick = "--quick" in argv
    return {"writes": 2_000 if quick else 20_000, "samples": 300 if quick else 2_000, "wire_writes": 2_000 if quick else 10_000}


def _percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 3),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 3),
        "samples": len(ordered),
    }


async def _with_board(path: Path, body: Any) -> Any:
    store = open_store(path)
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(store.writer.run)
            board = Blackboard(store)
            await board.load()
            result = await body(board)
            await store.writer.aclose()
            nursery.cancel_scope.cancel()
        return result
    finally:
        store.close()


async def _cas_writers(board: Blackboard, writers: int, total: int) -> dict[str, Any]:
    """``writers`` tasks, each on its own key: read the version, write if it is unchanged."""
    per_writer = total // writers

    async def writer(n: int) -> None:
        key = f"cas/{writers}/{n}"
        for i in range(per_writer):
            entry = board.find(key)
            await board.set(key, {"n": n, "i": i}, if_version=entry.version if entry else 0)

    started = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for n in range(writers):
            nursery.start_soon(writer, n)
    elapsed = time.perf_counter() - started
    return {"writers": writers, "writes": per_writer * writers, "writes_per_s": round(per_writer * writers / elapsed)}


async def _hot_key(board: Blackboard, writers: int, total: int) -> dict[str, Any]:
    """``writers`` tasks racing on one key with ``if_version``: one wins each round; a loser
    waits for the winner's write to commit (``Blackboard.wait``) before it tries again."""
    wins = conflicts = 0

    async def writer(n: int) -> None:
        nonlocal wins, conflicts
        while wins < total:
            entry = board.find("hot")
            seen = entry.version if entry else 0
            try:
                await board.set("hot", n, if_version=seen)
                wins += 1
            except Conflict:
                conflicts += 1
                await board.wait(key="hot", after_version=seen)

    started = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for n in range(writers):
            nursery.start_soon(writer, n)
    elapsed = time.perf_counter() - started
    return {"writers": writers, "successes_per_s": round(wins / elapsed), "conflicts_per_s": round(conflicts / elapsed)}


async def _wait_latency(board: Blackboard, samples: int) -> dict[str, Any]:
    latencies: list[float] = []
    for i in range(samples):
        woken = trio.Event()
        started = 0.0

        async def waiter(version: int = i) -> None:
            await board.wait(key="wait/k", after_version=version)
            latencies.append(time.perf_counter() - started)
            woken.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(waiter)
            await trio.testing.wait_all_tasks_blocked()  # the waiter is registered
            started = time.perf_counter()
            await board.set("wait/k", i)
            await woken.wait()
    return _percentiles(latencies)


async def _in_process(tmp: Path, opts: dict[str, int]) -> dict[str, Any]:
    async def body(board: Blackboard) -> dict[str, Any]:
        return {
            "cas_1_writer": await _cas_writers(board, 1, opts["writes"] // 4),
            "cas_64_writers": await _cas_writers(board, 64, opts["writes"]),
            "hot_key": await _hot_key(board, 16, opts["writes"] // 10),
            "wait_latency": await _wait_latency(board, opts["samples"]),
        }

    with trio.fail_after(STAGE_TIMEOUT_S):
        return await _with_board(tmp / "in-process.db", body)


# -- through the wire ---------------------------------------------------------------------------


class _Daemon:
    def __init__(self, state: Path) -> None:
        env = {**os.environ, "ECHS_STATE_DIR": str(state), "ECHS_LOG_LEVEL": "warning", "HOME": str(state.parent), "CODEX_HOME": str(state.parent / "none")}
        env.pop("OPENAI_API_KEY", None)
        self.ready = threading.Event()
        command = [sys.executable, "-c", "from echsd.cli.echsd_main import main; main()", "serve", "--provider", "mock"]
        self.process = subprocess.Popen(command, env={**env, "ECHS_LOG_LEVEL": "info"}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.state = state
        threading.Thread(target=self._drain, daemon=True).start()
        if not self.ready.wait(30):
            self.stop()
            raise RuntimeError("echsd serve did not start")

    def _drain(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            if "echsd ready" in line:
                self.ready.set()
            elif '"level": "error"' in line:
                sys.stderr.write(line)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(30)


async def _wire(tmp: Path, opts: dict[str, int]) -> dict[str, Any]:
    daemon = _Daemon(tmp / "state")
    try:
        with trio.fail_after(STAGE_TIMEOUT_S):
            return await _wire_stages(daemon.state, opts)
    finally:
        daemon.stop()


async def _wire_stages(state: Path, opts: dict[str, int]) -> dict[str, Any]:
    connections = 16
    per_connection = opts["wire_writes"] // connections
    async with trio.open_nursery() as nursery:
        clients = [await nursery.start(_client, state) for _ in range(connections)]

        async def writer(n: int) -> None:
            version = 0
            for i in range(per_connection):
                version = (await clients[n].blackboard_set(f"wire/{n}", i, if_version=version))["version"]

        started = time.perf_counter()
        async with trio.open_nursery() as writers:
            for n in range(connections):
                writers.start_soon(writer, n)
        elapsed = time.perf_counter() - started
        wire_cas = {"connections": connections, "writes": per_connection * connections, "writes_per_s": round(per_connection * connections / elapsed)}

        watcher, writing = clients[0], clients[1]
        latencies: list[float] = []
        async with watcher.blackboard_events("lat/", since=0) as stream:
            await writing.blackboard_set("lat/k", 0)
            while (await stream.__anext__())["event"] != "blackboard.changed":
                pass  # a retention gap first: the log keeps the newest changes only
            # Subscribed (its replay brought that change) and flowing.
            for i in range(1, opts["samples"] + 1):
                async with trio.open_nursery() as write:
                    started = time.perf_counter()
                    write.start_soon(writing.blackboard_set, "lat/k", i)
                    event = await stream.__anext__()
                    latencies.append(time.perf_counter() - started)
                assert event["data"]["value"] == i
        nursery.cancel_scope.cancel()
    return {"wire_cas": wire_cas, "watch_latency": _percentiles(latencies)}


async def _client(state: Path, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    from echsd.wire.client import connect

    async with connect(state_dir=state) as client:
        task_status.started(client)
        await trio.sleep_forever()


def main(argv: list[str]) -> dict[str, Any]:
    opts = _options(argv)
    with tempfile.TemporaryDirectory() as tmp:
        result: dict[str, Any] = {"in_process": trio.run(_in_process, Path(tmp), opts)}
        if "--no-wire" not in argv:
            result["wire"] = trio.run(_wire, Path(tmp), opts)
    return result


if __name__ == "__main__":
    sys.stdout.write(json.dumps(main(sys.argv[1:]), indent=2) + "\n")
