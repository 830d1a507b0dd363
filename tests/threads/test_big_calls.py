"""Large model outputs never stall the daemon: while tool calls with megabytes of arguments
are handled (one long shell word, many 100 KB calls, a big shell apply_patch watched by
app-server clients), a second client's ``status`` is answered in under 100 ms, or, on a
machine so loaded that an idle daemon's own ``status`` takes longer, within three times
the slowest idle answer measured just before (the raw limit of the same run). And a call
past ``[tuning] tool_argument_bytes`` (4 MiB) is answered with an error saying so.

A real ``echsd serve`` is fed by a real ``echsd mock-upstream`` (a process of its own, so
the mock's work is not counted against the daemon), scripted from a file: the arguments
are larger than a user message may be.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
import trio
from trio_websocket import ConnectionClosed, wrap_client_stream

from echsd.appserver.ids import thread_uuid
from tests.cli.helpers import ECHSD, Serve, clean_env, echs, new_thread

STATUS_LIMIT_S = 0.100
PROBE_EVERY_S = 0.02
WIDE_WINDOW = {"context_window": 100_000_000}  # the big arguments go back to the "model"


class Upstream:
    """``echsd mock-upstream --script FILE``: each rule answers the message it matches."""

    def __init__(self, root: Path, rules: list[dict[str, Any]]) -> None:
        script = root / "script.json"
        script.write_text(json.dumps({"rules": rules, "endpoint": WIDE_WINDOW}))
        self.process = subprocess.Popen(
            [ECHSD, "mock-upstream", "--script", str(script)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=clean_env(root)
        )
        assert self.process.stdout is not None
        self.url = f"http://127.0.0.1:{int(self.process.stdout.readline().split()[1])}/v1"

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)


def calls_step(*calls: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"calls": list(calls)}, {"text": "all done"}]


def blob(size: int) -> str:
    """One long shell word, as models write binary files (base64 on one line)."""
    return ("QUJDRA" * (size // 6 + 1))[:size]


BIG_PATCH_LINES = 20_000


def big_shell_patch() -> str:
    lines = "\n".join(f"+line {index} of a file written in one call" for index in range(BIG_PATCH_LINES))
    return f"apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: big.txt\n{lines}\n*** End Patch\nEOF\n"


RULES = [
    {"match": "ONE-WORD", "steps": calls_step({"name": "exec_command", "arguments": {"cmd": f"echo '{blob(2_000_000)}' | base64 -d > f"}})},
    {
        # In a workdir that does not exist: every argument is read (parsed, checked, taken for a
        # patch or not, shown to approvers) but no process starts, so 25 shells parsing 100 KB
        # words on the machine's 2 cores do not stand in for the daemon's own work.
        "match": "MANY-CALLS",
        "steps": calls_step(
            *({"name": "exec_command", "arguments": {"cmd": f"echo {blob(100_000)}", "workdir": "/nonexistent/dir"}} for _ in range(25))
        ),
    },
    {"match": "BIG-PATCH", "steps": calls_step({"name": "exec_command", "arguments": {"cmd": big_shell_patch()}})},
    {"match": "TOO-LARGE", "steps": calls_step({"name": "exec_command", "arguments": {"cmd": f"echo {blob(4_500_000)}"}})},
]


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Serve]:
    root = tmp_path_factory.mktemp("bigcalls")
    upstream = Upstream(root, RULES)
    state = root / "state"
    serve = Serve(state, "--provider", "openai", "--base-url", upstream.url, "--app-server", f"unix://{state / 'app.sock'}")
    try:
        yield serve
    finally:
        serve.terminate()
        upstream.stop()


class Latency:
    """``status`` asked every 20 ms from a connection of its own, each answer timed."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self.idle: list[float] = []

    @property
    def limit(self) -> float:
        """100 ms, unless the machine's load alone makes an idle daemon slower than a third
        of that (a stall of the event loop is far past either)."""
        return max(STATUS_LIMIT_S, 3 * max(self.idle, default=0.0))

    @property
    def within_limit(self) -> bool:
        return max(self.samples) < self.limit

    async def measure_idle(self, state: Path, probes: int = 25) -> None:
        """The raw limit: ``status`` of the same daemon with nothing to do, timed the same way."""
        from echsd.wire.client import connect

        async with connect(state_dir=state) as client:
            for _ in range(probes):
                started = time.monotonic()
                await client.request("status", {})
                self.idle.append(time.monotonic() - started)
                await trio.sleep(PROBE_EVERY_S)  # pacing like the probe's, not synchronisation

    async def probe(self, state: Path, stop: trio.Event) -> None:
        from echsd.wire.client import connect

        async with connect(state_dir=state) as client:
            while not stop.is_set():
                started = time.monotonic()
                await client.request("status", {})
                self.samples.append(time.monotonic() - started)
                with trio.move_on_after(PROBE_EVERY_S):
                    await stop.wait()

    def report(self) -> str:
        ordered = sorted(self.samples)
        idle = max(self.idle, default=0.0) * 1000
        return (
            f"{len(ordered)} probes, median {ordered[len(ordered) // 2] * 1000:.1f} ms, max {ordered[-1] * 1000:.1f} ms;"
            f" idle max {idle:.1f} ms, limit {self.limit * 1000:.1f} ms"
        )


async def app_watcher(state: Path, thread_id: str, received: list[dict[str, Any]], *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    """An app-server client that resumed the thread and reads (without checking) all it is sent."""
    async with trio.open_nursery() as nursery:
        stream = await trio.open_unix_socket(str(state / "app.sock"))
        ws = await wrap_client_stream(nursery, stream, "localhost", "/rpc")
        await ws.send_message(json.dumps({"id": "i", "method": "initialize", "params": {"clientInfo": {"name": "t", "version": "0"}}}))
        await ws.send_message(json.dumps({"id": 1, "method": "thread/resume", "params": {"threadId": thread_uuid(thread_id)}}))
        try:
            while True:
                message = json.loads(await ws.get_message())
                received.append(message)
                if message.get("id") == 1:
                    assert "result" in message, message
                    task_status.started()
        except ConnectionClosed:
            pass


async def run_turn_measured(
    state: Path, thread_id: str, text: str, watchers: int = 0, approve: bool = False
) -> tuple[Latency, list[dict[str, Any]]]:
    """Send ``text``, follow the turn to its end while probing ``status`` (and approving
    every call); the latencies and the turn's events."""
    from echsd.wire.client import connect

    latency, stop, events = Latency(), trio.Event(), []
    await latency.measure_idle(state)
    async with trio.open_nursery() as nursery, connect(state_dir=state) as sender:
        for _ in range(watchers):
            await nursery.start(app_watcher, state, thread_id, [])
        nursery.start_soon(latency.probe, state, stop)
        with trio.fail_after(60):
            await sender.request("thread.send", {"thread_id": thread_id, "text": text})
            async with sender.events(thread_id, since=0) as stream:
                async for event in stream:
                    events.append(event)
                    if approve and event["event"] == "approval.requested":
                        params = {"request_id": event["data"]["request_id"], "decision": "approve"}
                        nursery.start_soon(sender.request, "approval.respond", params)
                    if event["event"] in ("turn.completed", "turn.error", "turn.interrupted"):
                        break
        stop.set()
        nursery.cancel_scope.cancel()
    return latency, events


async def measured_turn(
    state: Path, root: Path, text: str, *thread_args: str, **kwargs: Any
) -> tuple[Path, str, Latency, list[dict[str, Any]]]:
    """A new thread (its cwd a fresh directory under ``root``) runs ``text`` while
    ``status`` is timed. A probe over the limit gets one more try: a load spike of the
    shared 2-core machine rarely strikes twice, a stall of the event loop always does."""
    for attempt in range(2):
        cwd = root / f"attempt-{attempt}"
        cwd.mkdir()
        thread = new_thread(state, "--cwd", str(cwd), *thread_args)
        latency, events = await run_turn_measured(state, thread, text, **kwargs)
        if latency.within_limit:
            break
    return cwd, thread, latency, events


def outputs(events: list[dict[str, Any]]) -> list[str]:
    return [event["data"]["output"] for event in events if event["event"] == "tool.completed"]


async def test_one_long_shell_word(daemon: Serve, tmp_path: Path) -> None:
    _, _, latency, events = await measured_turn(daemon.state_dir, tmp_path, "ONE-WORD")
    assert events[-1]["event"] == "turn.completed", events[-1]
    assert len(outputs(events)) == 1
    assert latency.within_limit, latency.report()


@pytest.mark.parametrize("approval", ["never", "always"])
async def test_many_calls_with_large_arguments(daemon: Serve, tmp_path: Path, approval: str) -> None:
    _, _, latency, events = await measured_turn(
        daemon.state_dir, tmp_path, "MANY-CALLS", "--approval", approval, approve=approval == "always"
    )
    assert events[-1]["event"] == "turn.completed", events[-1]
    assert [output.startswith("error: workdir") for output in outputs(events)] == [True] * 25
    assert len([event for event in events if event["event"] == "approval.resolved"]) == (25 if approval == "always" else 0)
    assert latency.within_limit, latency.report()


async def test_big_shell_patch_watched_by_app_server_clients(daemon: Serve, tmp_path: Path) -> None:
    cwd, _, latency, events = await measured_turn(daemon.state_dir, tmp_path, "BIG-PATCH", watchers=3)
    assert events[-1]["event"] == "turn.completed", events[-1]
    assert (cwd / "big.txt").read_text().count("\n") == BIG_PATCH_LINES
    assert latency.within_limit, latency.report()


async def test_arguments_over_the_limit_are_refused(daemon: Serve, tmp_path: Path) -> None:
    """(Not timed: reading 4.5 MB of streamed arguments is the model stream's work.)"""
    _, thread, _, events = await measured_turn(daemon.state_dir, tmp_path, "TOO-LARGE")
    assert events[-1]["event"] == "turn.completed", events[-1]
    [output] = outputs(events)
    assert "over the limit of 4,194,304 bytes" in output and "tool_argument_bytes" in output and "did not run" in output
    started = next(event for event in events if event["event"] == "tool.started")
    assert "over the limit" in started["data"]["arguments"]
    history = json.loads(echs(daemon.state_dir, "history", thread, "--json").stdout)
    call = next(item for item in history if item["type"] == "function_call")
    answer = next(item for item in history if item["type"] == "function_call_output")
    assert answer["call_id"] == call["call_id"] and "over the limit" in answer["output"]
