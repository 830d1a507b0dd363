"""Side by side with Codex's own app-server (``codex app-server``, the Codex CLI that
``bin/install-codex-cli`` installs) on the same mock upstream, through the same protocol.

Both servers listen on loopback WebSockets (``codex app-server --listen ws://...`` and
``echsd serve --app-server ws://...``) and are driven by the same lean client: it starts
threads and turns as the TUI does and counts ``item/agentMessage/delta`` notifications.
Both stream from one ``echsd mock-upstream`` process (one HTTP chunk per SSE event, each
delta stamped with the time the mock wrote it), and beside every figure stands the raw
limit measured in the same run: the same stream read by a bare reader
(``bench.upstream``). Runs alternate between the two servers so that the machine's load
moves both.

Figures, per server:
- deltas/s through one thread to the client, a 20,000-delta reply at full speed;
- CPU per delta of the server's processes (Codex: the node launcher and its native
  binary; echsd: the daemon), over that stream;
- aggregate deltas/s with 10 threads streaming at once at full speed;
- a 200-delta turn at full speed: ``turn/start`` to ``turn/completed`` (median);
- delta latency at a model's pace (one thread at 100 deltas/s): the mock's write to the
  client, p50/p99.

``--hog`` runs everything again with a CPU hog (a process spinning on one core) alongside;
``--runs=N`` repeats (median). The page ``bench/results/codex.md`` shows it all side by
side; ``--publish`` copies it to ``docs/bench/codex.md``, which the README links. Codex is skipped, with the reason, when the CLI cannot be
installed (no npm, no registry).
"""

from __future__ import annotations

import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import orjson
import trio
from trio_websocket import ConnectionClosed, HandshakeError, connect_websocket_url

from bench.machine import OthersMeter, cpu_s
from bench.upstream import MockUpstreamProcess, bare_read, bare_readers, script
from bench.wirekit import REPO, ServeProcess, percentiles
from echsd import logs

STREAM = 20_000
THREADS, THREAD_DELTAS = 10, 2_000  # 20,000 in all: within what echsd buffers for one client (8 MiB; past it, deltas are dropped)
TURN_DELTAS, TURNS = 200, 10
PACED_DELTAS, PACE_MS = 300, 10
MESSAGE_LIMIT = 1 << 26
_DELTA = '"item/agentMessage/delta"'
_TURN = re.compile(r'"turnId":\s*"([^"]+)"')
_STAMPS = re.compile(r'"delta":\s*"([\d. ]+)"')


def _tree_cpu_s(pid: int) -> float:
    """CPU seconds of a process and all its descendants (alive ones)."""
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        try:
            total += cpu_s(current)
            for task in os.listdir(f"/proc/{current}/task"):
                todo += [int(c) for c in Path(f"/proc/{current}/task/{task}/children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class CodexAppServer:
    """``codex app-server --listen ws://127.0.0.1:PORT`` pointed at the mock."""

    name = "codex app-server"

    def __init__(self, codex: str, base_url: str, home: Path) -> None:
        home.mkdir(parents=True, exist_ok=True)
        self.port = _free_port()
        self.url = f"ws://127.0.0.1:{self.port}"
        self.headers: list[tuple[bytes, bytes]] = []
        provider = f'model_providers.bench={{name="bench", base_url="{base_url}", wire_api="responses", env_key="BENCH_MOCK_KEY"}}'
        model = "gpt-5.5"  # one Codex 0.169 knows (with one it does not, it sends parallel_tool_calls without tools)
        command = [codex, "app-server", "--listen", self.url, "-c", 'model_provider="bench"', "-c", provider, "-c", f'model="{model}"', "-c", 'approval_policy="never"']
        env = {**os.environ, "CODEX_HOME": str(home), "BENCH_MOCK_KEY": "unused", "RUST_LOG": "error"}
        self.process = subprocess.Popen(command, env=env, cwd=home, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def cpu_s(self) -> float:
        return _tree_cpu_s(self.process.pid)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)


class EchsdAppServer:
    """``echsd serve --app-server ws://127.0.0.1:PORT`` pointed at the mock."""

    name = "echsd"

    def __init__(self, base_url: str, state: Path) -> None:
        self.port = _free_port()
        self.url = f"ws://127.0.0.1:{self.port}"
        self.daemon = ServeProcess(state, base_url=base_url, extra=("--app-server", self.url))
        self.headers: list[tuple[bytes, bytes]] = []

    def cpu_s(self) -> float:
        return _tree_cpu_s(self.daemon.process.pid)

    def stop(self) -> None:
        self.daemon.stop()


class AppClient:
    """The lean client: requests, and per turn its deltas (stamps) and its end."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.ids = 0
        self.waiting: dict[int, tuple[list[Any], trio.Event]] = {}
        self.deltas: dict[str, list[tuple[float, float]]] = {}  # turn id: (stamp, arrival)
        self.done: dict[str, float] = {}  # turn id: perf_counter of turn/completed
        self.first = self.last = 0.0  # perf_counter of the first and last delta
        self.changed = trio.Event()

    async def call(self, method: str, params: dict[str, Any]) -> Any:
        self.ids += 1
        box: list[Any] = []
        done = trio.Event()
        self.waiting[self.ids] = (box, done)
        await self.ws.send_message(json.dumps({"id": self.ids, "method": method, "params": params}))
        with trio.fail_after(60):
            await done.wait()
        if "error" in box[0]:
            raise RuntimeError(f"{method}: {box[0]['error']}")
        return box[0]["result"]

    async def read(self) -> None:
        while True:
            try:
                text = await self.ws.get_message()
            except ConnectionClosed:
                return
            if _DELTA in text:  # the hot path: no JSON parse, the stamps and the turn cut out
                now = time.time()
                self.last = time.perf_counter()
                self.first = self.first or self.last
                turn = _TURN.search(text)
                stamps = _STAMPS.search(text)
                if turn is not None and stamps is not None:
                    self.deltas.setdefault(turn.group(1), []).extend((float(s), now) for s in stamps.group(1).split())
                    continue
            message = orjson.loads(text)
            method = message.get("method")
            if method == "item/agentMessage/delta":  # not in the usual shape: parse it
                params = message["params"]
                self.deltas.setdefault(params["turnId"], []).extend((float(s), time.time()) for s in params["delta"].split())
                continue
            if method == "turn/completed":
                self.done[message["params"]["turn"]["id"]] = time.perf_counter()
            elif "id" in message and "method" not in message and message["id"] in self.waiting:
                box, event = self.waiting.pop(message["id"])
                box.append(message)
                event.set()
            elif "id" in message and method is not None:  # a server request we do not expect: refuse
                await self.ws.send_message(json.dumps({"id": message["id"], "error": {"code": -32601, "message": "not supported"}}))
            self.changed.set()
            self.changed = trio.Event()

    async def initialize(self) -> None:
        await self.call("initialize", {"clientInfo": {"name": "echsd-bench", "title": None, "version": "0.1"}, "capabilities": {"experimentalApi": True}})
        await self.ws.send_message(json.dumps({"method": "initialized"}))

    async def new_thread(self, cwd: str) -> str:
        result = await self.call("thread/start", {"model": None, "cwd": cwd, "approvalPolicy": "never"})
        return str(result["thread"]["id"])

    async def start_turn(self, thread_id: str, text: str) -> str:
        params = {"threadId": thread_id, "clientUserMessageId": str(uuid.uuid4()), "input": [{"type": "text", "text": text, "text_elements": []}]}
        return str((await self.call("turn/start", params))["turn"]["id"])

    async def until_done(self, turn_ids: list[str], timeout: float = 300) -> None:
        with trio.fail_after(timeout):
            while any(t not in self.done for t in turn_ids):
                await self.changed.wait()


async def _connect(server: Any, nursery: trio.Nursery) -> AppClient:
    """A client of ``server``, retried while the server starts."""
    deadline = trio.current_time() + 60
    while True:
        try:
            ws = await connect_websocket_url(nursery, server.url, extra_headers=server.headers, max_message_size=MESSAGE_LIMIT)
            break
        except (OSError, HandshakeError, trio.BrokenResourceError):
            if trio.current_time() > deadline:
                raise
            await trio.sleep(0.1)  # polling a starting server for readiness
    client = AppClient(ws)
    nursery.start_soon(client.read)
    await client.initialize()
    return client


# -- the figures ----------------------------------------------------------------------------


async def streamed(server: Any, cwd: str, threads: int, deltas: int, delay_ms: float = 0) -> dict[str, Any]:
    """``threads`` threads stream ``deltas`` stamped deltas each at once: deltas/s (first to
    last arrival), CPU per delta of the server, latency from the mock's write."""
    async with trio.open_nursery() as nursery:
        client = await _connect(server, nursery)
        ids = [await client.new_thread(cwd) for _ in range(threads)]
        text = script(deltas, delay_ms)
        cpu = server.cpu_s()
        started = time.perf_counter()
        turns = [await client.start_turn(tid, text) for tid in ids]
        await client.until_done(turns)
        cpu = server.cpu_s() - cpu
        arrivals = [pair for turn in turns for pair in client.deltas.get(turn, [])]
        nursery.cancel_scope.cancel()
    assert len(arrivals) == threads * deltas, (server.name, len(arrivals), threads * deltas)
    return {
        "deltas_per_s": round(len(arrivals) / (client.last - client.first)),
        "cpu_us_per_delta": round(cpu / len(arrivals) * 1e6, 1),
        "latency": percentiles([a - s for s, a in arrivals]),
        "seconds": round(client.last - started, 3),
    }


async def turn_times(server: Any, cwd: str) -> list[float]:
    """``turn/start`` to ``turn/completed`` of a ``TURN_DELTAS``-delta reply, ``TURNS`` times."""
    async with trio.open_nursery() as nursery:
        client = await _connect(server, nursery)
        thread = await client.new_thread(cwd)
        times = []
        for _ in range(TURNS):
            started = time.perf_counter()
            turn = await client.start_turn(thread, script(TURN_DELTAS))
            await client.until_done([turn])
            times.append(client.done[turn] - started)
        nursery.cancel_scope.cancel()
    return times


async def raw_limits(base_url: str) -> dict[str, Any]:
    """The same streams read by bare readers: one, ten at once, one paced."""
    one = await bare_read(base_url, script(STREAM))
    ten = await bare_readers(base_url, THREADS, script(THREAD_DELTAS))
    paced = await bare_read(base_url, script(PACED_DELTAS, PACE_MS))
    turns = []
    for _ in range(TURNS):
        started = time.perf_counter()
        await bare_read(base_url, script(TURN_DELTAS), stamped=False)
        turns.append(time.perf_counter() - started)
    first, last = min(s.first for s in ten), max(s.last for s in ten)
    return {
        "deltas_per_s": round(one.deltas / (one.last - one.first)),
        "threads_deltas_per_s": round(sum(s.deltas for s in ten) / (last - first)),
        "turn_ms_p50": round(statistics.median(turns) * 1000, 2),
        "paced_latency": percentiles([a - s for s, a in paced.arrivals]),
    }


async def one_round(server: Any, cwd: str) -> dict[str, Any]:
    one = await streamed(server, cwd, 1, STREAM)
    ten = await streamed(server, cwd, THREADS, THREAD_DELTAS)
    turns = await turn_times(server, cwd)
    paced = await streamed(server, cwd, 1, PACED_DELTAS, PACE_MS)
    return {
        "deltas_per_s": one["deltas_per_s"],
        "cpu_us_per_delta": one["cpu_us_per_delta"],
        "threads_deltas_per_s": ten["deltas_per_s"],
        "threads_cpu_us_per_delta": ten["cpu_us_per_delta"],
        "turn_ms_p50": round(statistics.median(turns) * 1000, 2),
        "paced_latency": paced["latency"],
    }


def _median_of(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in rounds[0].items():
        if isinstance(value, dict):
            out[key] = {k: statistics.median(r[key][k] for r in rounds) for k in value if k != "samples"}
        else:
            out[key] = statistics.median(r[key] for r in rounds)
    return out


def _codex_binary() -> tuple[str | None, str]:
    try:
        out = subprocess.run([str(REPO / "bin" / "install-codex-cli")], capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"cannot install the Codex CLI: {exc}"
    if out.returncode != 0:
        return None, f"cannot install the Codex CLI: {out.stderr.strip()[-300:]}"
    return out.stdout.strip(), ""


async def compare(codex: str, runs: int) -> dict[str, Any]:
    """Alternating rounds on both servers (medians), beside the raw limits of the same runs."""
    with tempfile.TemporaryDirectory(prefix="bench-codex-") as tmp:
        root = Path(tmp)
        mock = MockUpstreamProcess()
        servers = [CodexAppServer(codex, mock.base_url, root / "codex-home"), EchsdAppServer(mock.base_url, root / "echsd-state")]
        meter = OthersMeter([mock.pid])
        for server in servers:
            meter.add(server.daemon.process.pid if isinstance(server, EchsdAppServer) else server.process.pid)
        rounds: dict[str, list[dict[str, Any]]] = {s.name: [] for s in servers}
        raws: list[dict[str, Any]] = []
        work = root / "work"
        work.mkdir()
        try:
            echsd = servers[1]
            await echsd.daemon.ready()
            echsd.headers = [(b"authorization", b"Bearer " + (echsd.daemon.state / "token").read_bytes().strip())]
            mark = meter.mark()
            for _ in range(runs):
                raws.append(await raw_limits(mock.base_url))
                for server in servers:
                    rounds[server.name].append(await one_round(server, str(work)))
            usage = meter.since(mark)
        finally:
            for server in servers:
                server.stop()
            mock.stop()
    return {
        "raw": _median_of(raws),
        **{name: _median_of(r) for name, r in rounds.items()},
        "machine": {"others_cores": usage.others_cores, "load_1min": usage.load_1min, "seconds": usage.seconds},
    }


def _hog() -> subprocess.Popen[bytes]:
    """A process spinning on one core for as long as it lives."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


# (label, key, better): the rows of the markdown table
_ROWS = (
    ("deltas/s, one thread, a 20,000-delta reply at full speed", ("deltas_per_s",), "higher"),
    ("... CPU per delta of the server's processes, µs", ("cpu_us_per_delta",), "lower"),
    (f"deltas/s, {THREADS} threads at once at full speed (aggregate)", ("threads_deltas_per_s",), "higher"),
    ("... CPU per delta, µs", ("threads_cpu_us_per_delta",), "lower"),
    (f"a {TURN_DELTAS}-delta turn: turn/start to turn/completed, p50 ms", ("turn_ms_p50",), "lower"),
    (f"delta latency at {1000 // PACE_MS} deltas/s, mock's write to client, p50 ms", ("paced_latency", "p50_ms"), "lower"),
    ("... p99 ms", ("paced_latency", "p99_ms"), "lower"),
)
_RAW = {"deltas_per_s", "threads_deltas_per_s", "turn_ms_p50", "paced_latency"}
_CONDITIONS = (("quiet", "Without the hog"), ("one_core_busy", "With a CPU hog spinning on one core alongside"))


def _value(figures: dict[str, Any], key: tuple[str, ...]) -> float | None:
    value: Any = figures
    for part in key:
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def markdown(result: dict[str, Any]) -> str:
    """The comparison as a markdown page: per condition, each figure for both servers and
    the raw limit of the same run, with how busy the machine was with other work."""
    lines = [
        "# echsd beside Codex's app-server (`make bench ARGS=\"codex --hog\"`)",
        "",
        f"{result.get('when', '')}; {result['codex']}; medians of {result['runs']} rounds, the servers alternating; "
        "both stream from one `echsd mock-upstream` (one HTTP chunk per SSE event) through the app-server protocol "
        "to the same lean client. Raw limit: the same stream read by a bare reader in the same run (CPU: none). "
        "echsd makes every delta durable before it sends it; Codex keeps nothing.",
    ]
    for key, label in _CONDITIONS:
        if key not in result:
            continue
        run = result[key]
        machine = run["machine"]
        lines += [
            "",
            f"## {label}",
            "",
            f"Other work kept {machine['others_cores']} of {os.cpu_count()} cores busy on average (our hog counts as other work); load {machine['load_1min']}.",
            "",
            "| figure | echsd | Codex app-server | raw limit | echsd ahead |",
            "|---|---:|---:|---:|:---:|",
        ]
        for what, path, better in _ROWS:
            ours, theirs = _value(run["echsd"], path), _value(run["codex app-server"], path)
            raw = _value(run["raw"], path) if path[0] in _RAW else None
            ahead = "" if ours is None or theirs is None else ("yes" if (ours > theirs if better == "higher" else ours < theirs) else "no")
            lines.append(f"| {what} | {_shown(ours)} | {_shown(theirs)} | {_shown(raw)} | {ahead} |")
    return "\n".join(lines) + "\n"


def _shown(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:g}"


def main(argv: list[str]) -> dict[str, Any]:
    """``--hog`` runs it all again beside a CPU hog; ``--publish`` copies the markdown page
    (``bench/results/codex.md``) to ``docs/bench/codex.md``."""
    logs.configure(level="warning")
    runs = next((int(a.split("=", 1)[1]) for a in argv if a.startswith("--runs=")), 3)
    codex, reason = _codex_binary()
    if codex is None:
        return {"skipped": reason}
    version = subprocess.run([codex, "--version"], capture_output=True, text=True, timeout=60).stdout.strip()
    when = time.strftime("%Y-%m-%d %H:%M %Z")
    result: dict[str, Any] = {"codex": version, "runs": runs, "when": when, "quiet": trio.run(compare, codex, runs)}
    if "--hog" in argv:
        hog = _hog()
        try:
            result["one_core_busy"] = trio.run(compare, codex, runs)
        finally:
            hog.kill()
            hog.wait()
    page = REPO / "bench" / "results" / "codex.md"
    page.parent.mkdir(exist_ok=True)
    page.write_text(markdown(result))
    if "--publish" in argv:
        (REPO / "docs" / "bench").mkdir(parents=True, exist_ok=True)
        (REPO / "docs" / "bench" / "codex.md").write_text(page.read_text())
    return result


if __name__ == "__main__":
    sys.stdout.write(json.dumps(main(sys.argv[1:]), indent=2) + "\n")
