"""The web view's listener against ``echsd serve --web --metrics --provider mock``.

1. ``scrape``: ``GET /metrics`` on the ``--metrics`` listener, one at a time on one
   keep-alive connection, with ``--threads`` threads that each ran a turn (their counters,
   histograms and states are all in it), p50/p99 and the answer's size; beside it the raw
   limit: ``GET /static/icon.svg`` (a static file) on the web listener, the same HTTP stack doing
   nothing of its own.
2. ``change_to_page``: from a client's ``blackboard.set`` on the native wire to the moment a
   logged-in page's overview stream (``GET /api/stream``, Server-Sent Events) carries the
   change, one at a time, p50/p99; beside it the raw limit: the same change seen by a native
   wire client subscribed to the blackboard.

``--quick`` runs smaller counts.
"""

from __future__ import annotations

import json
import socket
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import trio

from bench.bench_agents import _fill as fill_threads  # each ran a turn, all idle
from bench.wirekit import ServeProcess

STAGE_TIMEOUT_S = 300


def _options(argv: list[str]) -> dict[str, int]:
    quick = "--quick" in argv
    values = {"threads": 30 if quick else 200, "scrapes": 50 if quick else 300, "changes": 50 if quick else 300}
    for arg in argv:
        if arg.startswith("--threads="):
            values["threads"] = int(arg.split("=", 1)[1])
    return values


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"p50_ms": round(statistics.median(ordered) * 1000, 3), "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 3)}


async def _timed_gets(url: str, count: int) -> tuple[list[float], int]:
    async with httpx.AsyncClient(timeout=30) as http:
        await http.get(url)  # the connection, and a first scrape's imports, out of the figures
        samples, size = [], 0
        for _ in range(count):
            started = time.perf_counter()
            answer = await http.get(url)
            samples.append(time.perf_counter() - started)
            assert answer.status_code == 200, answer.text
            size = len(answer.content)
    return samples, size


async def _change_latency(serve: ServeProcess, web: str, changes: int) -> dict[str, Any]:
    """Blackboard changes: written on the wire, seen on the page's SSE stream and by a wire subscriber."""
    from echsd.wire.client import connect

    async with connect(state_dir=serve.state) as writer, connect(state_dir=serve.state) as watcher:
        code = (await writer.web_login())["url"].split("#login=", 1)[1]
        async with httpx.AsyncClient(base_url=web, timeout=30) as http:
            assert (await http.post("/api/login", json={"code": code}, headers={"Origin": web})).status_code == 200
            async with http.stream("GET", "/api/stream") as response:
                lines = response.aiter_lines()

                async def page_sees(key: str) -> None:
                    async for line in lines:
                        if line.startswith("data: ") and key in line and json.loads(line[6:]).get("event") == "blackboard.changed":
                            return

                for attempt in range(20):  # until the stream is subscribed: a change written before it is not sent
                    with trio.move_on_after(1) as waiting:
                        await writer.blackboard_set(f"bench/warm/{attempt}", attempt)
                        await page_sees(f"bench/warm/{attempt}")
                    if not waiting.cancelled_caught:
                        break
                page = []
                for index in range(changes):
                    key = f"bench/page/{index}"
                    started = time.perf_counter()
                    await writer.blackboard_set(key, index)
                    await page_sees(key)
                    page.append(time.perf_counter() - started)
        wire = []
        events = watcher.blackboard_events("bench/wire/", since=0)
        async with events as stream:
            for index in range(changes):
                key = f"bench/wire/{index}"
                started = time.perf_counter()
                await writer.blackboard_set(key, index)
                async for event in stream:
                    if event.get("data", {}).get("key") == key:
                        break
                wire.append(time.perf_counter() - started)
    return {"page_sse": _percentiles(page), "raw_wire_subscriber": _percentiles(wire)}


async def _run(options: dict[str, int]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="echsd-bench-web-") as root:
        web_port, metrics_port = _free_port(), _free_port()
        serve = ServeProcess(Path(root) / "state", extra=("--web", f"tcp://127.0.0.1:{web_port}", "--metrics", f"tcp://127.0.0.1:{metrics_port}"))
        try:
            with trio.fail_after(STAGE_TIMEOUT_S):
                await serve.ready()
                await fill_threads(serve.state, options["threads"])
                web = f"http://127.0.0.1:{web_port}"
                scrape, size = await _timed_gets(f"http://127.0.0.1:{metrics_port}/metrics", options["scrapes"])
                static, _ = await _timed_gets(f"{web}/static/icon.svg", options["scrapes"])
                changes = await _change_latency(serve, web, options["changes"])
        finally:
            serve.stop()
    return {
        "threads": options["threads"],
        "scrape": {**_percentiles(scrape), "bytes": size, "samples": len(scrape)},
        "raw_static_get": _percentiles(static),
        "change_to_page": {**changes, "samples": options["changes"]},
    }


def main(argv: list[str]) -> dict[str, Any]:
    return trio.run(_run, _options(argv))


if __name__ == "__main__":
    import sys

    print(json.dumps(main(sys.argv[1:]), indent=2))
