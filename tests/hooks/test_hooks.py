"""Hooks on a real daemon: a command that gets each event's JSON on stdin (through a FIFO
the test reads, so it waits on the hook itself), a webhook receiver over real HTTP that
refuses first and checks the signature, and a hook that hangs past its timeout."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat
from pathlib import Path
from typing import Any, AsyncIterator

import pytest
import trio

from tests.helpers import Watch, make_settings, mock_directive

HOOK = """#!/bin/sh
# what a hook gets: the JSON on stdin, a few ECHS_* variables
{ printf '%s %s ' "$(date +%s.%N)" "$ECHS_EVENT"; cat; } > "$1"
"""

ONE_WRITE_HOOK = """#!/bin/sh
line="$(date +%s.%N) $ECHS_EVENT $(cat)"
printf '%s\\n' "$line" > "$1"
"""


async def start_daemon(nursery: Any, tmp_path: Path, base_url: str, config: str) -> Any:
    from echsd.daemon import Daemon

    state = tmp_path / "state"
    state.mkdir(mode=0o700, exist_ok=True)
    (state / "config.toml").write_text(config)
    daemon = Daemon(make_settings(state, base_url))
    await nursery.start(daemon.run)
    return daemon


async def with_a_thread(nursery: Any, tmp_path: Path, base_url: str, config: str, workdir: Path) -> tuple[Any, str]:
    """A daemon with ``config`` and a thread working in ``workdir``."""
    daemon = await start_daemon(nursery, tmp_path, base_url, config)
    return daemon, str((await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"])


class Fifo:
    """Lines written to a named pipe by hook programs, read as they come."""

    def __init__(self, path: Path) -> None:
        os.mkfifo(path)
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)  # held open: writers never block, no EOF
        self._buffer = b""

    async def line(self, timeout: float = 10.0) -> str:
        with trio.fail_after(timeout):
            while b"\n" not in self._buffer:
                await trio.lowlevel.wait_readable(self._fd)
                self._buffer += os.read(self._fd, 65536)
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode()

    def close(self) -> None:
        os.close(self._fd)


@pytest.fixture
def fifo(tmp_path: Path) -> Any:
    pipe = Fifo(tmp_path / "hook.fifo")
    yield pipe
    pipe.close()


def script(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


async def test_a_hook_program_gets_each_event_as_json_at_once(
    nursery: Any, tmp_path: Path, mock_upstream: Any, workdir: Path, fifo: Fifo
) -> None:
    hook = script(tmp_path / "hook.sh", HOOK)
    config = f'[hooks]\ncommand = "{hook}"\nargs = ["{fifo.path}"]\nevents = ["turn.completed", "approval.requested"]\ntimeout_s = 5\n'
    daemon = await start_daemon(nursery, tmp_path, mock_upstream.base_url, config)
    tid = (await daemon.ops.create_thread(cwd=str(workdir), approval="always"))["thread_id"]
    await daemon.ops.rename_thread(tid, "the build")
    async with Watch(daemon, tid) as watch:
        await daemon.ops.send(tid, mock_directive([{"calls": [{"name": "exec_command", "arguments": {"cmd": "echo approved"}}]}, {"text": "All tests pass."}]))
        asked = await watch.wait_type("approval.requested")
        received, kind, document = _parse(await fifo.line())
        assert kind == "approval.requested" and document["event"] == "approval.requested"
        assert received - asked.ts < 1.0, "the hook ran more than a second after the event"
        assert document["id"] == f"{tid}:{asked.seq}" and document["seq"] == asked.seq and document["thread_id"] == tid
        assert document["data"]["request_id"] == asked.data["request_id"]
        assert document["thread"] == {"name": "the build", "parent": None, "cwd": str(workdir), "model": document["thread"]["model"]}
        assert document["summary"] == "approval needed for exec_command: echo approved"
        await daemon.ops.respond_approval(asked.data["request_id"], "approve")
        done = await watch.wait_type("turn.completed")
        received, kind, document = _parse(await fifo.line())
        assert kind == "turn.completed" and document["data"]["turn_id"] == done.data["turn_id"]
        assert received - done.ts < 1.0, "the hook ran more than a second after the event"
        assert document["summary"] == "turn completed: All tests pass."
        assert not [e for e in watch.events if e.type == "turn.started" and e.seq > done.seq]
    with pytest.raises(trio.TooSlowError):  # other events (turn.started, tool.*) are filtered out
        await fifo.line(timeout=0.5)


async def test_by_default_a_hook_hears_of_turns_and_sub_agents_ending_not_of_their_steps(
    nursery: Any, tmp_path: Path, mock_upstream: Any, workdir: Path, fifo: Fifo
) -> None:
    hook = script(tmp_path / "hook.sh", ONE_WRITE_HOOK)  # hooks run at once here: each line in one write
    daemon, parent = await with_a_thread(nursery, tmp_path, mock_upstream.base_url, f'[hooks]\ncommand = "{hook}"\nargs = ["{fifo.path}"]\n', workdir)
    steps = [
        {"calls": [{"name": "spawn_agent", "arguments": {"message": "count the files"}}]},
        {"calls": [{"name": "wait_agents", "arguments": {}}]},
        {"text": "the child is done"},
    ]
    async with Watch(daemon, parent) as watch:
        await daemon.ops.send(parent, mock_directive(steps))
        await watch.wait_type("turn.completed")
    heard: list[tuple[str, str]] = []
    while len(heard) < 3:  # the child's turn, its completion told to the parent, the parent's turn
        _received, kind, document = _parse(await fifo.line())
        heard.append((kind, document["thread_id"]))
    child = watch.of_type("subagent.spawned")[0].data["agent_id"]
    assert sorted(heard) == sorted([("turn.completed", child), ("subagent.completed", parent), ("turn.completed", parent)])
    with pytest.raises(trio.TooSlowError):  # turn.started, tool.*, subagent.spawned, ...: not by default
        await fifo.line(timeout=0.5)


def _parse(line: str) -> tuple[float, str, dict[str, Any]]:
    received, kind, body = line.split(" ", 2)
    return float(received), kind, json.loads(body)


async def test_a_hanging_hook_is_killed_at_its_timeout_and_threads_go_on(
    nursery: Any, tmp_path: Path, mock_upstream: Any, workdir: Path
) -> None:
    pids = tmp_path / "pids"
    pids.mkdir()
    hang = script(tmp_path / "hang.sh", f'#!/bin/sh\nsleep 1000 &\necho "$$ $!" > {pids}/$ECHS_SEQ\nwait\n')
    config = f'[hooks]\ncommand = "{hang}"\nevents = ["turn.completed"]\ntimeout_s = 5\n'
    daemon, tid = await with_a_thread(nursery, tmp_path, mock_upstream.base_url, config, workdir)
    async with Watch(daemon, tid) as watch:
        await daemon.ops.send(tid, "turn 0")
        first = await watch.wait_type("turn.completed")
        hanging = await _processes(pids / str(first.seq))
        for index in (1, 2):  # the next turns end while the first one's hook still hangs
            await daemon.ops.send(tid, f"turn {index}")
            await watch.wait_count("turn.completed", index + 1)
    assert all(_alive(pid) for pid in hanging), "a turn waited for a hook"
    with trio.fail_after(15):  # killed at the timeout, the whole group (its sleep too)
        while any(_alive(pid) for pid in hanging):
            await trio.sleep(0.1)
    with trio.fail_after(15):
        while _hook_outcomes(daemon).get("timeout", 0) < 3:
            await trio.sleep(0.1)


async def _processes(path: Path) -> list[int]:
    """The pids a hanging hook wrote (the script and its child), once written."""
    with trio.fail_after(10):
        while not path.exists() or len(path.read_text().split()) < 2:
            await trio.sleep(0.02)
    return [int(pid) for pid in path.read_text().split()]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as file:
            return file.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _hook_outcomes(daemon: Any) -> dict[str, float]:
    from prometheus_client.parser import text_string_to_metric_families

    from echsd.metrics import render

    body, _type = render(daemon.metrics)
    return {
        sample.labels["outcome"]: sample.value
        for family in text_string_to_metric_families(body.decode())
        for sample in family.samples
        if sample.name == "echsd_hook_deliveries_total" and sample.labels.get("kind") == "command"
    }


class Receiver:
    """A webhook receiver: refuses each delivery's first attempt (503, Retry-After: 0),
    takes the second; records what it got."""

    def __init__(self) -> None:
        self.requests: list[tuple[dict[str, str], bytes]] = []
        self.arrived = trio.Event()
        self.port = 0

    async def serve(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        async with trio.open_nursery() as nursery:
            task_status.started()
            await trio.serve_listeners(self._handle, listeners, handler_nursery=nursery)

    async def _handle(self, stream: trio.SocketStream) -> None:
        import h11

        connection = h11.Connection(h11.SERVER)
        async with stream:
            while True:
                event = connection.next_event()
                if event is h11.NEED_DATA:
                    data = await stream.receive_some(65536)
                    connection.receive_data(data)
                    if not data:
                        return
                    continue
                if isinstance(event, h11.Request):
                    headers = {name.decode().lower(): value.decode() for name, value in event.headers}
                    body = b""
                    while not isinstance(event, h11.EndOfMessage):
                        event = connection.next_event()
                        if event is h11.NEED_DATA:
                            connection.receive_data(await stream.receive_some(65536))
                        elif isinstance(event, h11.Data):
                            body += event.data
                    first = not any(h.get("x-echsd-delivery") == headers.get("x-echsd-delivery") for h, _ in self.requests)
                    self.requests.append((headers, body))
                    self.arrived.set()
                    self.arrived = trio.Event()
                    status, extra = (503, [("Retry-After", "0")]) if first else (200, [])
                    answer = [connection.send(h11.Response(status_code=status, headers=[("Content-Length", "0"), *extra]))]
                    answer.append(connection.send(h11.EndOfMessage()))
                    await stream.send_all(b"".join(a for a in answer if a))
                    connection.start_next_cycle()
                elif isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
                    return

    async def wait(self, count: int) -> None:
        with trio.fail_after(15):
            while len(self.requests) < count:
                await self.arrived.wait()


@pytest.fixture
async def receiver(nursery: Any) -> AsyncIterator[Receiver]:
    server = Receiver()
    await nursery.start(server.serve)
    yield server


async def test_a_webhook_gets_a_signed_delivery_and_a_retry(
    nursery: Any, tmp_path: Path, mock_upstream: Any, workdir: Path, receiver: Receiver
) -> None:
    secret = "correct horse battery staple"
    config = f'[[hooks.webhook]]\nurl = "http://127.0.0.1:{receiver.port}/hook/s3cr3t-path"\nsecret = "{secret}"\nevents = ["turn.completed"]\n'
    daemon, tid = await with_a_thread(nursery, tmp_path, mock_upstream.base_url, config, workdir)
    async with Watch(daemon, tid) as watch:
        await daemon.ops.send(tid, mock_directive({"text": "shipped"}))
        done = await watch.wait_type("turn.completed")
    await receiver.wait(2)
    (first, body1), (second, body2) = receiver.requests[:2]
    assert body1 == body2 and first["x-echsd-delivery"] == second["x-echsd-delivery"] == f"{tid}:{done.seq}"
    assert (first["x-echsd-attempt"], second["x-echsd-attempt"]) == ("1", "2")
    expected = "sha256=" + hmac.new(secret.encode(), body1, hashlib.sha256).hexdigest()
    assert first["x-echsd-signature-256"] == second["x-echsd-signature-256"] == expected
    assert first["x-echsd-event"] == "turn.completed" and first["content-type"] == "application/json"
    document = json.loads(body1)
    assert document["event"] == "turn.completed" and document["data"]["final_text"] == "shipped"
    spool = tmp_path / "state" / "hooks"
    with trio.fail_after(5):  # delivered: nothing is left to send again at the next start
        while any(spool.rglob("*.json")):
            await trio.sleep(0.05)
    assert "s3cr3t-path" not in repr(daemon.settings.hooks.webhooks[0])


async def test_a_delivery_cut_short_by_a_stop_is_sent_at_the_next_start(
    nursery: Any, tmp_path: Path, mock_upstream: Any, workdir: Path
) -> None:
    """At least once: a delivery the receiver never took stays spooled and goes out when
    the daemon starts again, with the same id."""
    receiver = Receiver()
    port_holder = trio.socket.socket()
    await port_holder.bind(("127.0.0.1", 0))
    port = port_holder.getsockname()[1]
    port_holder.close()  # nothing listens there: every attempt fails
    config = f'[[hooks.webhook]]\nurl = "http://127.0.0.1:{port}/hook"\nevents = ["turn.completed"]\n'
    daemon, tid = await with_a_thread(nursery, tmp_path, mock_upstream.base_url, config, workdir)
    async with Watch(daemon, tid) as watch:
        await daemon.ops.send(tid, "one")
        done = await watch.wait_type("turn.completed")
    spool = tmp_path / "state" / "hooks"
    with trio.fail_after(10):
        while not any(spool.rglob("*.json")):
            await trio.sleep(0.05)
    daemon.request_stop()
    await daemon.wait_stopped()
    listeners = await trio.open_tcp_listeners(port, host="127.0.0.1")
    nursery.start_soon(trio.serve_listeners, receiver._handle, listeners)
    daemon = await start_daemon(nursery, tmp_path, mock_upstream.base_url, config)
    await receiver.wait(2)
    assert {headers["x-echsd-delivery"] for headers, _ in receiver.requests} == {f"{tid}:{done.seq}"}
    daemon.request_stop()
    await daemon.wait_stopped()


async def test_the_readme_s_notify_send_example_notifies(
    nursery: Any, tmp_path: Path, mock_upstream: Any, workdir: Path, fifo: Fifo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The [hooks] table the README gives, as it is, with a notify-send that reports its arguments."""
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    example = readme.split("A desktop notification for each of them", 1)[1].split("```toml\n", 1)[1].split("```", 1)[0]
    tools = tmp_path / "bin"
    tools.mkdir()
    script(tools / "notify-send", f'#!/bin/sh\nprintf "%s|" "$@" > {fifo.path}\necho >> {fifo.path}\n')
    monkeypatch.setenv("PATH", f"{tools}:{os.environ['PATH']}")
    daemon, tid = await with_a_thread(nursery, tmp_path, mock_upstream.base_url, example, workdir)
    await daemon.ops.send(tid, mock_directive({"text": "All tests pass."}))
    assert await fifo.line() == "-a|echsd|echsd: turn.completed|turn completed: All tests pass.|"
