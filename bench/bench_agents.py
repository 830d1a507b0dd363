"""Sub-agents and idle threads (issue 11 targets).

- RSS per idle thread, with 10,000 threads resident: ``echsd serve`` as a real process on
  the mock model; each thread runs one turn (so its worker, tools and history are in
  memory) and then sits idle. Target: at most 20 KiB per thread (Codex's app-server keeps
  about 1 MiB per thread).
- Spawning 100 sub-agents that each answer one message: from the parent's send to its
  wait_agents answer, minus the upstream's own time for those answers. Target: under 1 s.
- A parent waiting on 100 children wakes within 10 ms of the last completion (p99): from
  the commit of the last child's turn.completed to the commit of the parent's
  wait_agents result.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

from bench.bench_threads import directive, percentile

CHILDREN = 100


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def _ready(state: Path, deadline: float) -> None:
    from echsd.wire.client import WireError, connect

    while True:
        try:
            async with connect(state_dir=state, timeout=1.0) as client:
                await client.status()
                return
        except WireError:
            if time.monotonic() > deadline:
                raise
            await trio.sleep(0.01)  # polling a starting process for readiness


async def _fill(state: Path, threads: int) -> None:
    """``threads`` threads, each having run one turn, all idle at the end."""
    from echsd.wire.client import connect

    async with connect(state_dir=state) as client:
        created = []
        for _ in range(threads):
            created.append((await client.create_thread(cwd=str(state), tools=[]))["thread_id"])
        limiter = trio.CapacityLimiter(64)

        async def one(thread_id: str) -> None:
            async with limiter:
                await client.send(thread_id, "hi")

        async with trio.open_nursery() as nursery:
            for thread_id in created:
                nursery.start_soon(one, thread_id)
        while (await client.status())["threads"]["running"]:
            await trio.sleep(0.2)  # waiting for the last turns of a process we only observe


def idle_memory(threads: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="echsd-idle-") as tmp:
        state = Path(tmp) / "state"
        env = {**os.environ, "ECHS_LOG_LEVEL": "warning", "HOME": tmp, "CODEX_HOME": f"{tmp}/none"}
        env.pop("OPENAI_API_KEY", None)
        process = subprocess.Popen(
            [sys.executable, "-m", "echsd.cli.echsd_main", "serve", "--state-dir", str(state), "--provider", "mock"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            trio.run(_ready, state, time.monotonic() + 60)
            trio.run(_fill, state, 200)  # warm-up: code paths, caches and the allocator's arenas
            before = _rss_kib(process.pid)
            started = time.perf_counter()
            trio.run(_fill, state, threads)
            fill_s = time.perf_counter() - started
            after = _rss_kib(process.pid)
        finally:
            process.terminate()
            process.wait(30)
    return {
        "threads": threads,
        "rss_before_mb": round(before / 1024, 1),
        "rss_after_mb": round(after / 1024, 1),
        "kib_per_idle_thread": round((after - before) / threads, 2),
        "fill_s": round(fill_s, 1),
        "target_kib": 20,
    }


async def _spawn_run(daemon: Any, workdir: str) -> tuple[float, float, float]:
    """One parent spawning CHILDREN agents and waiting for all: (total s, upstream s, wake s)."""
    from echsd.events import Event

    events: list[Event] = []
    done = trio.Event()
    parent = (await daemon.ops.create_thread(cwd=workdir, tools=["spawn_agent", "wait_agents"]))["thread_id"]

    def listen(event: Event) -> None:
        events.append(event)
        if event.thread_id == parent and event.type == "turn.completed":
            done.set()

    listening = daemon.hub.listen("*", listen)
    spawns = [{"name": "spawn_agent", "arguments": {"message": f"child {i}\n" + directive({"text": f"answer {i}"})}} for i in range(CHILDREN)]
    started = time.time()
    await daemon.ops.send(parent, "fan out\n" + directive([{"calls": spawns}, {"calls": [{"name": "wait_agents", "arguments": {}}]}, {"text": "ok"}]))
    with trio.fail_after(120):
        await done.wait()
    listening.close()
    children = {e.thread_id for e in events if e.type == "thread.created" and e.thread_id != parent}
    child_turns = {}
    for event in events:
        if event.thread_id in children and event.type in ("turn.started", "turn.completed"):
            child_turns.setdefault(event.thread_id, {})[event.type] = event.ts
    upstream = max(turn["turn.completed"] - turn["turn.started"] for turn in child_turns.values())
    last_child = max(turn["turn.completed"] for turn in child_turns.values())
    waited = [e.ts for e in events if e.thread_id == parent and e.type == "tool.completed" and e.data["name"] == "wait_agents"][0]
    parent_done = [e.ts for e in events if e.thread_id == parent and e.type == "turn.completed"][0]
    return parent_done - started, upstream, waited - last_child


async def _spawns(runs: int) -> dict[str, Any]:
    from echsd.daemon import Daemon
    from echsd.settings import load_settings

    with tempfile.TemporaryDirectory(prefix="echsd-agents-") as tmp:
        state = Path(tmp) / "state"
        state.mkdir()
        (state / "config.toml").write_text("[tuning]\nmax_children = 200\nmax_running_subagents = 200\n")
        env = {"HOME": tmp, "CODEX_HOME": f"{tmp}/none", "ECHS_LOG_LEVEL": "warning"}
        daemon = Daemon(load_settings({"state_dir": str(state), "provider": "mock"}, env))
        async with trio.open_nursery() as nursery:
            await nursery.start(daemon.run)
            results = [await _spawn_run(daemon, tmp) for _ in range(runs)]
            daemon.request_stop()
            await daemon.wait_stopped()
    totals, upstreams, wakes = zip(*results)
    beyond = [total - upstream for total, upstream in zip(totals, upstreams)]
    return {
        "children": CHILDREN,
        "runs": runs,
        "total_s_p50": round(statistics.median(totals), 3),
        "beyond_upstream_s_p50": round(statistics.median(beyond), 3),
        "beyond_upstream_s_max": round(max(beyond), 3),
        "wake_ms_p50": round(statistics.median(wakes) * 1000, 2),
        "wake_ms_p99": round(percentile(list(wakes), 0.99) * 1000, 2),
        "targets": {"beyond_upstream_s": "< 1", "wake_ms_p99": "< 10"},
    }


def main(argv: list[str]) -> dict[str, Any]:
    quick = "--quick" in argv
    return {
        "idle_threads": idle_memory(1_000 if quick else 10_000),
        "spawn_100": trio.run(_spawns, 3 if quick else 10),
    }


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:]), indent=2))
