"""Unauthenticated clients cost little: small frames and a deadline before hello, caps on
connections from the descriptor limit with a reserve for the daemon's own work, big first
frames that hold up nobody, and clients that leave early without an error in the log."""

from __future__ import annotations

import os
import socket
import statistics
import struct
import threading
from pathlib import Path
from typing import Any

import msgpack
import pytest
import structlog
import trio

from echsd.wire.admission import ConnectionLimits
from echsd.wire.client import WireError, connect
from echsd.wire.session import PRE_AUTH_MESSAGE_BYTES
from tests.cli.helpers import free_port
from tests.helpers import mock_directive
from tests.wire.helpers import (
    WAIT_S,
    ServeProcess,
    binary_frame_header,
    closed_with,
    open_stream,
    raw_connection,
    start_daemon,
    stop_daemon,
    token_of,
    upgrade_request,
)

MIB = 1024 * 1024


@pytest.mark.parametrize("transport", ["unix", "tcp"])
async def test_a_frame_over_4_kib_before_hello_closes_the_connection(wired: Any, transport: str) -> None:
    host = "127.0.0.1" if transport == "tcp" else "localhost"
    async with raw_connection(wired, transport, host=host) as raw:
        await raw.send({"id": 1, "op": "hello", "params": {"protocol": 1, "token": "x" * PRE_AUTH_MESSAGE_BYTES}})
        assert await closed_with(raw) == 1009
    async with raw_connection(wired, transport, host=host) as raw:  # after hello, the configured limit
        await raw.hello(token_of(wired))
        created = await raw.request("thread.create", {"instructions": "y" * 200_000})
        assert created["ok"], created
        assert created["result"]["config"]["instructions"] == "y" * 200_000


async def test_no_hello_within_the_deadline_closes_the_connection(tmp_path: Path, mock_upstream: Any, nursery: Any) -> None:
    daemon = await start_daemon(nursery, tmp_path / "state", mock_upstream.base_url, tuning={"hello_timeout_s": 0.3})
    async with connect(state_dir=daemon.settings.state_dir) as client:  # in time: unaffected
        async with raw_connection(daemon, "tcp", host="127.0.0.1") as raw:
            answer = await raw.response()  # sent nothing at all
            assert answer["id"] is None and answer["error"]["code"] == "unauthorized"
            assert "no hello within 0.3 s" in answer["error"]["message"]
            assert await closed_with(raw) == 1008
        stream = await open_stream(daemon, "tcp")  # not even the WebSocket handshake
        await stream.send_all(b"GET /v1 HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        with trio.fail_after(WAIT_S):
            assert await stream.receive_some() == b""
        await stream.aclose()
        assert (await client.status())["version"]
    await stop_daemon(daemon)


async def test_clients_that_leave_during_the_handshake_log_no_error(wired: Any) -> None:
    full = upgrade_request()
    leaving = [full, full.replace(b"\r\n\r\n", b"\r\nOrigin: http://x\r\n\r\n"), b"\x00\x01 not http\r\n\r\n", b"GET /v1 HTTP/1.1\r\n", b""]
    with structlog.testing.capture_logs() as logs:
        for transport in ("unix", "tcp"):
            for data in leaving:
                stream = await open_stream(wired, transport)
                await stream.send_all(data)
                # close with a reset, before reading the daemon's answer
                stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                await stream.aclose()
        async with connect(state_dir=wired.settings.state_dir) as client:  # the daemon has handled them all
            for _ in range(10):
                assert (await client.status())["version"]
    errors = [entry for entry in logs if entry["log_level"] in ("error", "critical")]
    assert not errors, errors


def test_limits_keep_a_reserve_of_descriptors() -> None:
    low = ConnectionLimits.from_nofile(256)
    assert (low.reserve, low.max_connections, low.max_unauthenticated) == (96, 160, 20)
    usual = ConnectionLimits.from_nofile(1024)
    assert (usual.reserve, usual.max_connections, usual.max_unauthenticated) == (256, 768, 96)
    huge = ConnectionLimits.from_nofile(1 << 20)
    assert huge.max_connections == 10_000 and huge.max_unauthenticated == 256
    tiny = ConnectionLimits.from_nofile(16)
    assert tiny.max_connections == 8 and tiny.reserve == 8 and tiny.max_unauthenticated == 1


# -- a real daemon under attack (subprocesses, loopback TCP) ---------------------------------


def _open_idle(port: int, count: int) -> list[socket.socket]:
    sockets = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT_S)
        sockets.append(sock)
    return sockets


def _is_closed(sock: socket.socket) -> bool:
    """Whether the peer has closed ``sock`` (without waiting)."""
    try:
        return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def _connections_from(pid: int, ports: set[int]) -> int:
    """How many of process ``pid``'s descriptors are TCP connections whose far end is one of
    ``ports`` (read from /proc: its socket inodes against the kernel's TCP table)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue  # closed meanwhile
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as rows:
            next(rows)
            for row in rows:
                fields = row.split()
                if fields[9] in inodes and int(fields[2].rsplit(":", 1)[1], 16) in ports:
                    count += 1
    return count


def _closed_by_peer(sock: socket.socket) -> bool:
    sock.settimeout(WAIT_S)
    try:
        while sock.recv(65536):
            pass
    except OSError:
        pass
    return True


def _upgrade(sock: socket.socket) -> None:
    sock.sendall(upgrade_request("127.0.0.1"))
    answer = b""
    while b"\r\n\r\n" not in answer:
        chunk = sock.recv(4096)
        assert chunk, "closed during the handshake"
        answer += chunk
    assert answer.startswith(b"HTTP/1.1 101"), answer


async def _tool_turn(client: Any, cwd: Path, word: str) -> str:
    """A turn that runs ``echo word`` through exec_command; the tool's output."""
    thread = await client.create_thread(cwd=str(cwd))
    script = [{"calls": [{"name": "exec_command", "arguments": {"cmd": f"echo {word}"}}]}, {"text": "ran it"}]
    output = ""
    async with client.events(thread["thread_id"]) as events:
        await client.send(thread["thread_id"], "run it\n" + mock_directive(script))
        with trio.fail_after(WAIT_S * 2):
            async for event in events:
                item = event["data"].get("item") or {} if event["event"] == "item.completed" else {}
                if item.get("type") == "function_call_output":
                    output = str(item.get("output"))
                if event["event"] in ("turn.completed", "turn.error"):
                    assert event["event"] == "turn.completed", event
                    return output
    raise AssertionError("no turn end")


async def test_a_daemon_with_256_descriptors_refuses_clearly_and_keeps_its_reserve(tmp_path: Path) -> None:
    port = free_port()
    serve = await trio.to_thread.run_sync(lambda: ServeProcess(tmp_path / "state", "--listen", f"tcp://127.0.0.1:{port}", nofile=256))
    limits = ConnectionLimits.from_nofile(256)
    state = serve.state_dir  # the unix socket is kept although --listen names only TCP
    try:
        async with connect(state_dir=state) as client:
            assert "hi-before" in await _tool_turn(client, tmp_path, "hi-before")
            baseline = serve.open_descriptors

            # 1. 300 idle TCP connections: the oldest unauthenticated ones make room, at once
            # (well before the hello deadline of 10 s), and the descriptors stay few.
            idle = await trio.to_thread.run_sync(_open_idle, port, 300)
            peak = serve.open_descriptors
            with trio.fail_after(5):
                while sum(map(_is_closed, idle)) < 300 - limits.max_unauthenticated:
                    peak = max(peak, serve.open_descriptors)
                    await trio.sleep(0.02)
            assert peak <= baseline + limits.max_unauthenticated + 10, (baseline, peak)  # + evicted, closing
            async with connect(state_dir=state) as newcomer:  # the unix socket has its own quota
                assert (await newcomer.status())["version"]
            async with connect(url=f"ws://127.0.0.1:{port}", token_file=state / "token") as newcomer:  # so does a real TCP client
                assert (await newcomer.status())["version"]
            assert "hi-flood" in await _tool_turn(client, tmp_path, "hi-flood")
            idle_ports = {sock.getsockname()[1] for sock in idle}
            for sock in idle:
                sock.close()
            with trio.fail_after(WAIT_S):  # the daemon notices they are gone: none of theirs is left
                # (counted by their ports: its pools of store readers and upstream connections
                # may have grown meanwhile, as they should)
                while _connections_from(serve.process.pid, idle_ports):
                    await trio.sleep(0.02)

            # 2. Authenticated connections up to the cap: then a clear refusal, never EMFILE.
            async with trio.open_nursery() as nursery:
                opened: list[Any] = []
                refusal: WireError | None = None
                stop = trio.Event()

                async def hold(task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
                    try:
                        async with connect(state_dir=state) as held:
                            opened.append(held)
                            task_status.started(True)
                            await stop.wait()
                    except WireError as exc:
                        task_status.started(exc)

                while refusal is None and len(opened) < limits.max_connections + 5:
                    outcome = await nursery.start(hold)
                    if isinstance(outcome, WireError):
                        refusal = outcome
                assert refusal is not None and refusal.code == "handshake_refused", refusal
                assert "503" in refusal.message and f"limit is {limits.max_connections}" in refusal.message
                assert limits.max_connections - 5 <= len(opened) + 1 <= limits.max_connections
                at_cap = serve.open_descriptors
                assert at_cap <= 256 - limits.reserve + 40, at_cap  # the daemon's own ~30, the reserve untouched
                assert "hi-cap" in await _tool_turn(client, tmp_path, "hi-cap")  # the reserve at work
                assert (await opened[0].status())["version"]
                stop.set()
            async with connect(state_dir=state) as again:  # room again once they are gone
                assert (await again.status())["version"]
    finally:
        assert await trio.to_thread.run_sync(serve.stop) == 0
    log = "".join(serve.lines)
    assert "Too many open files" not in log and "EMFILE" not in log


def _unfinished_frames(port: int, count: int, sent: int) -> list[socket.socket]:
    """``count`` connections each starting a 16 MiB message and sending ``sent`` bytes of it."""
    chunk = b"\x00" * sent
    sockets = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT_S)
        _upgrade(sock)
        try:
            sock.sendall(binary_frame_header(16 * MIB) + chunk)
        except OSError:
            pass  # closed on us already: what we want
        sockets.append(sock)
    return sockets


def _big_first_frames(port: int, frame: bytes, stop: threading.Event, sent: list[int]) -> None:
    while not stop.is_set():
        with socket.create_connection(("127.0.0.1", port), timeout=WAIT_S) as sock:
            _upgrade(sock)
            try:
                sock.sendall(frame)
            except OSError:
                pass
            _closed_by_peer(sock)
            sent.append(1)  # the daemon has dealt with it


async def test_big_first_frames_cost_neither_memory_nor_anyone_s_latency(tmp_path: Path) -> None:
    port = free_port()
    serve = await trio.to_thread.run_sync(lambda: ServeProcess(tmp_path / "state", "--listen", f"tcp://127.0.0.1:{port}"))
    try:
        async with connect(state_dir=serve.state_dir) as client:
            assert (await client.status())["version"]
            before = serve.rss_bytes
            # 150 connections each sending 1 MiB of an announced 16 MiB first message.
            unfinished = await trio.to_thread.run_sync(_unfinished_frames, port, 150, MIB)
            assert (await client.status())["version"]  # the daemon has read what they sent
            grown = serve.rss_bytes - before
            assert all(await trio.to_thread.run_sync(lambda: [_closed_by_peer(sock) for sock in unfinished]))
            for sock in unfinished:
                sock.close()
            assert grown < 48 * MIB, f"the daemon grew by {grown / MIB:.0f} MiB"

            # Two clients sending 16 MiB msgpack arrays as first frames, over and over.
            array = msgpack.packb([None] * (16 * MIB - 64))
            frame = binary_frame_header(len(array)) + array
            stop, sent = threading.Event(), []
            attackers = [threading.Thread(target=_big_first_frames, args=(port, frame, stop, sent), daemon=True) for _ in range(2)]
            for attacker in attackers:
                attacker.start()
            latencies: list[float] = []

            async def timed_status() -> None:
                started = trio.current_time()
                await client.status()
                latencies.append(trio.current_time() - started)

            try:  # a status every 10 ms (not one after the other: a stall then delays many)
                async with trio.open_nursery() as nursery:
                    began = trio.current_time()
                    while trio.current_time() - began < 2.0 or len(sent) < 4:
                        nursery.start_soon(timed_status)
                        await trio.sleep(0.01)
            finally:
                stop.set()
                for attacker in attackers:
                    await trio.to_thread.run_sync(attacker.join, WAIT_S)
            p99 = statistics.quantiles(latencies, n=100)[98]
            assert p99 < 0.15, f"status p99 {p99 * 1000:.1f} ms under the flood (median {statistics.median(latencies) * 1000:.1f} ms)"
    finally:
        assert await trio.to_thread.run_sync(serve.stop) == 0
