"""What the wire benchmarks share: a bare trio-websocket server (the raw limit), an
``echsd serve`` process, and a lean client that counts and times events.

The lean client does no more per event than a client must (decode the frame, look at
``event`` and ``seq``), so a figure measured with it is the daemon's, not the client's.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import msgpack
import trio
from trio_websocket import ConnectionClosed, wrap_client_stream, wrap_server_stream

from echsd.wire import codec

BATCH = 32
RECEIVE_BUFFER = 65536
MAX_MESSAGE = 1 << 30
STAGE_TIMEOUT_S = 300
REPO = Path(__file__).resolve().parents[1]
TERMINAL = ("turn.completed", "turn.interrupted", "turn.error")


def percentiles(values: list[float]) -> dict[str, float]:
    """p50/p99 in ms of durations given in seconds."""
    if not values:
        return {"p50_ms": float("nan"), "p99_ms": float("nan"), "samples": 0}
    ordered = sorted(values)
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 2),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 2),
        "samples": len(ordered),
    }


def stream_text(count: int, delay_ms: float = 0) -> str:
    """A user message scripting ``count`` one-character deltas (``delay_ms`` apart)."""
    step: dict[str, Any] = {"repeat": {"chunk": "x", "count": count}}
    if delay_ms:
        step["delay_ms"] = delay_ms
    return "go\nmock: " + json.dumps(step)


# -- the raw limit --------------------------------------------------------------------------


def raw_server(path: str) -> None:
    """A bare server: on ``{"n": N}`` it sends N encoded events in frames of ``BATCH``."""

    async def handle(stream: trio.SocketStream) -> None:
        async with trio.open_nursery() as nursery:
            request = await wrap_server_stream(nursery, stream, max_message_size=MAX_MESSAGE, receive_buffer_size=RECEIVE_BUFFER)
            ws = await request.accept()
            ask = msgpack.unpackb(await ws.get_message())
            events = [codec.packb({"event": "turn.delta", "thread_id": "thr_0000000000000000", "seq": i, "ts": 0.0, "data": {"turn_id": "turn_1", "item_id": "msg_1", "delta": "x"}}) for i in range(1, ask["n"] + 1)]
            await ws.get_message()  # "go": every client is connected
            for start in range(0, len(events), BATCH):
                batch = events[start : start + BATCH]
                await ws.send_message(codec.encode_batch(batch, len(batch)))
            await ws.send_message(codec.packb({"done": True}))
            await ws.get_message()
            nursery.cancel_scope.cancel()

    async def run() -> None:
        sock = trio.socket.socket(trio.socket.AF_UNIX)
        await sock.bind(path)
        sock.listen(512)
        listener = trio.SocketListener(sock)
        sys.stdout.write("LISTENING\n")
        sys.stdout.flush()
        await trio.serve_listeners(handle, [listener])

    trio.run(run)


class RawServer:
    """``raw_server`` in its own process (as the daemon is), on ``path``."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.process = subprocess.Popen(
            [sys.executable, "-c", f"from bench.wirekit import raw_server; raw_server({path!r})"],
            stdout=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        assert self.process.stdout is not None and self.process.stdout.readline().strip() == "LISTENING"

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(30)


async def _raw_client(path: str, n: int, ready: trio.Event, go: trio.Event, done: list[float]) -> None:
    async with trio.open_nursery() as nursery:
        ws = await wrap_client_stream(nursery, await trio.open_unix_socket(path), "localhost", "/", max_message_size=MAX_MESSAGE, receive_buffer_size=RECEIVE_BUFFER)
        await ws.send_message(msgpack.packb({"n": n}))
        ready.set()
        await go.wait()
        await ws.send_message(b"go")
        received = 0
        while True:
            _, events = codec.split_frame(await ws.get_message())
            if not events:
                break
            received += len(events)
        assert received == n
        done.append(time.perf_counter())
        await ws.send_message(b"bye")
        nursery.cancel_scope.cancel()


async def raw_rate(path: str, clients: int, n: int) -> float:
    """Events/s the raw server delivers: ``n`` events to each of ``clients`` (summed)."""
    readies = [trio.Event() for _ in range(clients)]
    go = trio.Event()
    done: list[float] = []
    async with trio.open_nursery() as nursery:
        for ready in readies:
            nursery.start_soon(_raw_client, path, n, ready, go, done)
        for ready in readies:
            await ready.wait()
        await trio.sleep(0.3)  # let the server encode its events before the clock starts
        started = time.perf_counter()
        go.set()
    return clients * n / (max(done) - started)


# -- the daemon -----------------------------------------------------------------------------


class ServeProcess:
    """``echsd serve`` on a fresh state dir: the built-in mock, or ``base_url`` (an
    ``echsd mock-upstream`` in its own process) with ``--provider openai``."""

    def __init__(self, state: Path, *, base_url: str | None = None, tuning: str = "retained_deltas = 2000000", log: Path | None = None, extra: tuple[str, ...] = ()) -> None:
        self.state = state
        self.log = log  # the daemon's stderr goes there (appended), else error lines to ours
        self.socket = str(state / "echsd.sock")
        self.env = {**os.environ, "ECHS_STATE_DIR": str(state), "ECHS_LOG_LEVEL": "warning", "HOME": str(state.parent), "CODEX_HOME": str(state.parent / "none")}
        self.env.pop("OPENAI_API_KEY", None)
        self.provider = ["--provider", "mock"] if base_url is None else ["--provider", "openai", "--base-url", base_url]
        self.provider += extra  # more ``serve`` options (e.g. ``--app-server``)
        state.mkdir(parents=True)
        (state / "config.toml").write_text(f"[tuning]\n{tuning}\n")
        self.process = self._start()

    def _start(self) -> subprocess.Popen[str]:
        self.started = time.monotonic()
        command = [sys.executable, "-c", "from echsd.cli.echsd_main import main; main()", "serve", *self.provider]
        if self.log is not None:
            with self.log.open("ab") as log:
                return subprocess.Popen(command, env=self.env, stdout=subprocess.DEVNULL, stderr=log)
        process = subprocess.Popen(command, env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        threading.Thread(target=self._drain, args=(process,), daemon=True).start()
        return process

    @staticmethod
    def _drain(process: subprocess.Popen[str]) -> None:
        assert process.stderr is not None
        for line in process.stderr:
            if "error" in line.lower():
                sys.stderr.write(line)

    async def ready(self, timeout: float = 30) -> float:
        """Wait until a client completes ``hello`` + ``status``; seconds since the process started."""
        from echsd.wire.client import WireError, connect

        with trio.fail_after(timeout):
            while True:
                if self.process.poll() is not None:
                    raise RuntimeError(f"echsd serve exited with {self.process.returncode}")
                try:
                    async with connect(state_dir=self.state, timeout=1.0) as client:
                        await client.status()
                        return time.monotonic() - self.started
                except WireError:
                    await trio.sleep(0.01)  # polling a starting process for readiness

    def restart(self) -> float:
        """SIGTERM, wait, start again (``ready`` then times the start): seconds to exit."""
        stopped = self.stop()
        self.start()
        return stopped

    def start(self) -> None:
        """Start again after ``stop`` or ``kill`` (``ready`` then times the start)."""
        self.process = self._start()

    def stop(self) -> float:
        """SIGTERM and wait: seconds until it exited."""
        started = time.monotonic()
        self.process.terminate()
        self.process.wait(30)
        return time.monotonic() - started

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(30)


class LeanConn:
    """A lean client: requests, and events counted (with latency samples) as they come.

    It does not re-fetch backpressure gaps (the library does); it counts them, and a
    gap's range counts as covered so a stage ends when every seq was delivered or
    reported. Events whose type is in ``marked`` are kept with their arrival time.

    ``deltas`` counts the model's deltas: with ``stamped`` (the mock's time-stamped
    deltas, ``bench.upstream.script``) one per stamp, since one ``turn.delta`` may carry
    several joined, and latency runs from each stamp (the upstream's write) to arrival;
    else one per ``turn.delta`` and latency from the event's ``ts``.
    """

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.ids = 0
        self.waiting: dict[int, Any] = {}
        self.events = 0
        self.gaps = 0
        self.failed = 0  # turns that ended other than completed
        self.covered: dict[str, int] = {}  # per thread: highest seq delivered or reported
        self.latencies: list[float] | None = None
        self.stamped = False
        self.deltas = 0
        self.arrivals: list[tuple[float, float]] = []  # stamped: (stamp, arrival), wall clock
        self.spans: dict[str, list[float]] = {}  # stamped: per thread, its first and last stamp
        self.last = 0.0  # perf_counter of the last frame with events
        self.first_delta = 0.0  # ... and of the first and last turn.delta
        self.last_delta = 0.0
        self.marked: set[str] = set()
        self.marks: dict[str, list[tuple[float, dict[str, Any]]]] = {}
        self.changed = trio.Event()

    async def request(self, op: str, **params: Any) -> Any:
        self.ids += 1
        box: list[Any] = []
        done = trio.Event()
        self.waiting[self.ids] = (box, done)
        await self.ws.send_message(codec.encode_request(self.ids, op, params))
        await done.wait()
        response = box[0]
        if not response["ok"]:
            raise RuntimeError(response["error"])
        return response["result"]

    async def read(self) -> None:
        while True:
            try:
                message = await self.ws.get_message()
            except ConnectionClosed:
                return
            responses, events = codec.split_frame(message)
            now = time.time()
            for response in responses:
                box, done = self.waiting.pop(response["id"])
                box.append(response)
                done.set()
            if not events:
                continue
            self.last = time.perf_counter()
            covered = self.covered
            for event in events:
                kind = event["event"]
                seq = event["seq"]
                if kind == "turn.delta":
                    self.last_delta = self.last
                    if not self.first_delta:
                        self.first_delta = self.last
                    if self.stamped:
                        self._stamps(event, now)
                    else:
                        self.deltas += 1
                        if self.latencies is not None:
                            self.latencies.append(now - event["ts"])
                elif kind == "events.gap":
                    self.gaps += 1
                    seq = event["data"]["to_seq"]
                elif kind in ("turn.interrupted", "turn.error"):
                    self.failed += 1
                if kind in self.marked:
                    self.marks.setdefault(kind, []).append((self.last, event))
                if seq > covered.get(event["thread_id"], 0):
                    covered[event["thread_id"]] = seq
            self.events += len(events)
            self.changed.set()
            self.changed = trio.Event()

    def _stamps(self, event: dict[str, Any], now: float) -> None:
        stamps = [float(s) for s in event["data"]["delta"].split()]
        if not stamps:
            return
        self.deltas += len(stamps)
        self.arrivals.extend((stamp, now) for stamp in stamps)
        if self.latencies is not None:
            self.latencies.extend(now - stamp for stamp in stamps)
        span = self.spans.get(event["thread_id"])
        if span is None:
            self.spans[event["thread_id"]] = [stamps[0], stamps[-1]]
        else:
            span[1] = stamps[-1]

    def reset(self) -> None:
        """Start counting afresh (covered seqs are kept: they are facts about threads)."""
        self.events = self.gaps = self.failed = self.deltas = 0
        self.arrivals, self.spans = [], {}
        self.last = self.first_delta = self.last_delta = 0.0
        self.marks = {}

    async def until_covered(self, last_seqs: dict[str, int]) -> None:
        with trio.fail_after(STAGE_TIMEOUT_S):
            while any(self.covered.get(tid, 0) < seq for tid, seq in last_seqs.items()):
                await self.changed.wait()

    async def until_ended(self, turns: int) -> None:
        """Until ``turns`` turns ended (their terminal events are ``marked``), so every delta
        of theirs has arrived; or until a gap, which may have swallowed an end."""
        with trio.fail_after(STAGE_TIMEOUT_S):
            while sum(len(self.marks.get(kind, [])) for kind in TERMINAL) < turns and not self.gaps:
                await self.changed.wait()

    async def until_marked(self, kind: str, count: int, timeout: float = 60) -> tuple[float, dict[str, Any]]:
        """The ``count``-th ``kind`` event to arrive (arrival perf_counter, event)."""
        with trio.fail_after(timeout):
            while len(self.marks.get(kind, [])) < count:
                await self.changed.wait()
        return self.marks[kind][count - 1]


async def connect_lean(nursery: trio.Nursery, daemon: ServeProcess) -> LeanConn:
    stream = await trio.open_unix_socket(daemon.socket)
    ws = await wrap_client_stream(nursery, stream, "localhost", "/v1", max_message_size=MAX_MESSAGE, receive_buffer_size=RECEIVE_BUFFER)
    conn = LeanConn(ws)
    nursery.start_soon(conn.read)
    await conn.request("hello", protocol=1, token=(daemon.state / "token").read_text().strip())
    return conn


async def settled(control: LeanConn, thread_ids: list[str]) -> dict[str, int]:
    """Wait until the threads are idle with nothing queued; their last seqs."""
    wanted = set(thread_ids)
    with trio.fail_after(STAGE_TIMEOUT_S):
        while True:
            while (await control.request("status"))["threads"]["running"]:
                await trio.sleep(0.05)  # polling the daemon's state from outside (status is cheap)
            threads = [t for t in await control.request("thread.list") if t["thread_id"] in wanted]
            if all(t["state"] == "idle" and not t["queued"] and t["active_turn"] is None for t in threads):
                return {t["thread_id"]: t["last_seq"] for t in threads}
            await trio.sleep(0.05)  # polling the daemon's state from outside
