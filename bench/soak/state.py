"""What the soak's tasks share: the daemon and whether it is up, the client connections,
what was acknowledged and deleted, counters, and the violations found."""

from __future__ import annotations

import json
import random
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trio

from bench.soak.procs import ToolProcesses
from bench.wirekit import ServeProcess, percentiles
from echsd.wire.client import Client, WireError, connect

CALL_DEADLINE_S = 180.0  # a request retried across restarts gives up after this
REQUEST_TIMEOUT_S = 60.0  # an answer slower than this is a finding (the daemon hung)
SETTLE_S = 180.0  # a thread not idle again after this is a finding
LOST = ("connection_lost", "unavailable")
TIMED = {"thread.send": "send_ack", "status": "status"}  # ops whose answer time is sampled


@dataclass
class Options:
    duration_s: float = 1800.0
    threads: int = 100
    restart_every_s: float = 240.0
    sample_every_s: float = 5.0
    think_s: tuple[float, float] = (1.0, 5.0)
    seed: int = 0


class Latencies:
    """Durations in seconds by kind (``status`` round trips, ``send_ack``: a ``thread.send``
    answered, ``delta``: a live ``turn.delta`` from the daemon's stamp to a follower): all of
    them for the summary, and the window since the sampler last took it, so a slowdown over
    time shows."""

    def __init__(self) -> None:
        self.all: defaultdict[str, list[float]] = defaultdict(list)
        self._window: defaultdict[str, list[float]] = defaultdict(list)

    def add(self, kind: str, seconds: float) -> None:
        self.all[kind].append(seconds)
        self._window[kind].append(seconds)

    def take_window(self) -> dict[str, float]:
        """``{kind}_p50_ms`` and ``{kind}_p99_ms`` of the window, which starts again."""
        row: dict[str, float] = {}
        for kind, values in self._window.items():
            if values:
                figures = percentiles(values)
                row.update({f"{kind}_p50_ms": figures["p50_ms"], f"{kind}_p99_ms": figures["p99_ms"]})
        self._window.clear()
        return row

    def overall(self) -> dict[str, dict[str, float]]:
        return {kind: percentiles(values) for kind, values in sorted(self.all.items())}


class Soak:
    def __init__(self, options: Options, out: Path) -> None:
        self.options = options
        self.out = out
        self.rng = random.Random(options.seed)
        self.marker = f"soak{self.rng.randrange(16**6):06x}"
        self.daemon = ServeProcess(out / "state", tuning="", log=out / "daemon.log")
        self.procs = ToolProcesses(self.marker)
        self.containment = "unknown"
        self.started = time.monotonic()
        self.generation = 0  # bumped by every daemon start
        self.is_up = False
        self._up_changed = trio.Event()
        self.acked: dict[str, str] = {}  # input_id -> thread_id, every acknowledged input
        self.deleted: set[str] = set()  # threads the soak deleted (after checking them)
        self.actions: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()
        self.error_samples: list[dict[str, Any]] = []
        self.violations: list[dict[str, Any]] = []
        self.restarts: list[dict[str, Any]] = []
        self.latency = Latencies()

    @property
    def state_dir(self) -> Path:
        return self.daemon.state

    def elapsed(self) -> float:
        return round(time.monotonic() - self.started, 1)

    def set_up(self, up: bool) -> None:
        self.is_up = up
        if up:
            self.generation += 1
        self._up_changed.set()
        self._up_changed = trio.Event()

    async def wait_up(self) -> None:
        while not self.is_up:
            await self._up_changed.wait()

    async def wait_change(self) -> None:
        """Until the daemon goes down or comes up."""
        await self._up_changed.wait()

    def violation(self, kind: str, **details: Any) -> None:
        record = {"t": self.elapsed(), "kind": kind, **details}
        self.violations.append(record)
        with (self.out / "violations.jsonl").open("a") as log:
            log.write(json.dumps(record) + "\n")
        sys.stderr.write(f"soak: VIOLATION {json.dumps(record)}\n")

    def error(self, action: str, exc: BaseException, **details: Any) -> None:
        """A request refused or failed, or an action timed out: counted, the first few of
        each kind kept."""
        code = getattr(exc, "code", type(exc).__name__)
        key = f"{action}:{code}"
        self.errors[key] += 1
        if self.errors[key] <= 3:
            self.error_samples.append({"t": self.elapsed(), "key": key, "message": str(exc)[:300], **details})


def _shown(params: dict[str, Any]) -> dict[str, Any]:
    return {k: (v if k != "text" else v[:80]) for k, v in params.items()}


class Slot:
    """One client connection, shared by a group of drivers; ``replace`` swaps in a fresh
    one (a client that reconnects), and in-flight requests on the old one are retried."""

    def __init__(self, soak: Soak) -> None:
        self.soak = soak
        self.client: Client | None = None
        self.inflight: dict[int, tuple[str, dict[str, Any], float]] = {}  # what waits for an answer, since when
        self._calls = 0
        self._ready = trio.Event()
        self._replace = trio.Event()

    async def run(self) -> None:
        while True:
            await self.soak.wait_up()
            try:
                async with connect(state_dir=self.soak.state_dir) as client:
                    self.client = client
                    self._ready.set()
                    self._replace = trio.Event()
                    await self._replace.wait()
                    self._ready = trio.Event()  # callers wait for the next client
                    self.client = None
            except WireError:
                await trio.sleep(0.5)  # the daemon went away while connecting: try again

    def replace(self) -> None:
        self._replace.set()

    async def call(self, op: str, **params: Any) -> Any:
        """``op`` with retries across lost connections and restarts; other failures raise."""
        params = {k: v for k, v in params.items() if v is not None}
        deadline = trio.current_time() + CALL_DEADLINE_S
        attempts = 0
        while True:
            await self._ready.wait()
            attempts += 1
            client = self.client
            assert client is not None
            self._calls += 1
            call = self._calls
            self.inflight[call] = (op, params, trio.current_time())
            sent = (trio.current_time(), self.soak.generation, client.generation)
            try:
                with trio.fail_after(REQUEST_TIMEOUT_S):
                    answer = await client.request(op, params)
                if op in TIMED:
                    self.soak.latency.add(TIMED[op], trio.current_time() - sent[0])
                return answer
            except trio.TooSlowError:
                where = {
                    "daemon_generation": [sent[1], self.soak.generation],  # at the send, now
                    "client_generation": [sent[2], client.generation],
                    "client": {"current": client is self.client, "closed": client.closed, "connected": client.connected},
                }
                self.soak.violation(
                    "request_hung", op=op, params=_shown(params), timeout_s=REQUEST_TIMEOUT_S, same_connection=self._waiting(), **where
                )
                raise
            except WireError as exc:
                if exc.code not in LOST or trio.current_time() > deadline:
                    if exc.code == "internal":
                        self.soak.violation("internal_error", op=op, message=exc.message, thread_id=params.get("thread_id"))
                    # a retried op may find its own work done (a delete sent before a restart)
                    self.soak.error(op + (" (retried)" if attempts > 1 else ""), exc, thread_id=params.get("thread_id"))
                    raise
            finally:
                del self.inflight[call]
            await self._recover(client)

    def _waiting(self) -> list[dict[str, Any]]:
        """The requests waiting on this connection, oldest first (a connection's requests
        are answered in turn, so the oldest may be holding up the rest)."""
        now = trio.current_time()
        return [
            {"op": op, "params": _shown(params), "waited_s": round(now - since, 1)}
            for op, params, since in sorted(self.inflight.values(), key=lambda c: c[2])
        ][:5]

    async def _recover(self, client: Client) -> None:
        await self.soak.wait_up()
        if client is not self.client or client.closed or client.connected:
            return
        try:
            await client.reconnect(timeout=30)
        except WireError:
            await trio.sleep(0.5)  # not back yet: the caller retries
