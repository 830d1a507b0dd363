"""The upstream side of the streaming benchmarks: the mock in its own process, the scripts
it streams, and bare readers (the raw limit: the least any client can do with a stream).

A bare reader posts the same request the daemon would and reads the answer off a plain
socket: no HTTP parser, no SSE decoder, no JSON; it counts delta events by their
``event:`` line and, for time-stamped deltas (``repeat: {"stamp": "time"}``), takes each
delta's stamp to time its arrival. So beside every daemon figure stands what the same
mock, on the same machine at the same moment, delivers to a reader doing nothing else.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import orjson
import trio

from echsd.codex.catalog import default_catalog

DELTA_EVENT = b"event: response.output_text.delta\n"
_STAMP = re.compile(rb'"delta":"(\d+\.\d+) "')


class MockUpstreamProcess:
    """``echsd mock-upstream`` in its own process, so it does not share the daemon's core."""

    def __init__(self) -> None:
        command = [sys.executable, "-m", "echsd.cli.echsd_main", "mock-upstream"]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert self.process.stdout is not None
        self.base_url = f"http://127.0.0.1:{int(self.process.stdout.readline().split()[1])}/v1"

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(30)


def script(count: int, delay_ms: float = 0, *, chunks: str = "event", stamp: bool = True) -> str:
    """A user message scripting ``count`` deltas, ``delay_ms`` apart (0: full speed).

    ``chunks="event"``: one HTTP chunk per SSE event, as real endpoints frame them
    (``"batch"``: the mock's ~64 KiB chunks). ``stamp``: each delta is the time it was written
    (``"1764190000.123456 "``), else ``"x"``.
    """
    step: dict[str, Any] = {"repeat": {"stamp": "time", "count": count} if stamp else {"chunk": "x", "count": count}, "chunks": chunks}
    if delay_ms:
        step["delay_ms"] = delay_ms
    return "go\nmock: " + json.dumps(step)


def request_body(text: str) -> bytes:
    message = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
    model = default_catalog().recommended("openai") or "mock-model"  # what the daemon asks for by default
    return orjson.dumps({"model": model, "instructions": "x", "input": [message], "tools": [], "store": False, "stream": True})


@dataclass
class BareStream:
    deltas: int = 0
    first: float = 0.0  # perf_counter of the first and last byte holding a delta
    last: float = 0.0
    arrivals: list[tuple[float, float]] = field(default_factory=list)  # (stamp, arrival), wall clock


async def bare_read(base_url: str, text: str, stamped: bool = True) -> BareStream:
    """One streamed answer read off a plain socket, deltas counted (and timed by stamp)."""
    url = urlsplit(base_url)
    body = request_body(text)
    head = (
        f"POST {url.path}/responses HTTP/1.1\r\nHost: {url.netloc}\r\nContent-Type: application/json\r\n"
        f"Accept: text/event-stream\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    out = BareStream()
    stream = await trio.open_tcp_stream(url.hostname or "127.0.0.1", url.port or 80)
    try:
        await stream.send_all(head + body)
        tail = b""  # an event split across reads waits for its end
        while True:  # until the mock closes the connection after the answer (Connection: close)
            data = await stream.receive_some(262144)
            if not data:
                break
            now = time.perf_counter()
            data = tail + data
            cut = data.rfind(b"\n\n") + 2
            if cut < 2:
                tail = data
                continue
            done, tail = data[:cut], data[cut:]
            found = done.count(DELTA_EVENT)
            if found:
                out.deltas += found
                out.first = out.first or now
                out.last = now
                if stamped:
                    wall = time.time()
                    out.arrivals.extend((float(s), wall) for s in _STAMP.findall(done))
    finally:
        await stream.aclose()
    return out


async def bare_readers(base_url: str, count: int, text: str, stamped: bool = True) -> list[BareStream]:
    """``count`` bare readers of the same script at once."""
    results: list[BareStream] = []

    async def one() -> None:
        results.append(await bare_read(base_url, text, stamped))

    async with trio.open_nursery() as nursery:
        for _ in range(count):
            nursery.start_soon(one)
    return results
