"""Wire test helpers: a real daemon on a temp state dir, raw WebSocket and HTTP access."""

from __future__ import annotations

import base64
import os
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

import msgpack
import trio
from trio_websocket import WebSocketConnection, wrap_client_stream

from tests.helpers import make_settings, store_url_for

WAIT_S = 15.0


async def start_daemon(nursery: trio.Nursery, state_dir: Path, base_url: str | None, *, tcp: bool = True, tuning: dict[str, Any] | None = None) -> Any:
    """An in-process ``Daemon`` listening on ``<state>/echsd.sock`` (and loopback TCP, port 0)."""
    from echsd.daemon import Daemon

    state_dir.mkdir(parents=True, exist_ok=True)
    if tuning:
        lines = ["[tuning]", *(f"{key} = {value!r}" for key, value in tuning.items())]
        (state_dir / "config.toml").write_text("\n".join(lines) + "\n")
    listen = [f"unix://{state_dir / 'echsd.sock'}"] + (["tcp://127.0.0.1:0"] if tcp else [])
    daemon = Daemon(make_settings(state_dir, base_url, listen=listen))
    await nursery.start(daemon.run)
    return daemon


async def stop_daemon(daemon: Any) -> None:
    daemon.request_stop()
    with trio.fail_after(WAIT_S):
        await daemon.wait_stopped()


def tcp_port(daemon: Any) -> int:
    url = next(u for u in daemon.server.urls if u.startswith("tcp://"))
    return int(url.rsplit(":", 1)[1])


def state_dir_of(daemon: Any) -> Path:
    """The state dir of an in-process ``Daemon`` or a ``ServeProcess``."""
    return Path(daemon.state_dir) if hasattr(daemon, "state_dir") else Path(daemon.settings.state_dir)


def token_of(daemon: Any) -> str:
    return (state_dir_of(daemon) / "token").read_text().strip()


async def open_stream(daemon: Any, transport: str = "unix") -> trio.SocketStream:
    if transport == "unix":
        return await trio.open_unix_socket(str(state_dir_of(daemon) / "echsd.sock"))
    return await trio.open_tcp_stream("127.0.0.1", tcp_port(daemon))


async def http_status(stream: trio.SocketStream, *, path: str = "/v1", host: str = "localhost", headers: tuple[str, ...] = ()) -> int:
    """Send a WebSocket upgrade request by hand and return the HTTP status code."""
    await stream.send_all(upgrade_request(host, path, headers))
    data = b""
    with trio.fail_after(WAIT_S):
        while b"\r\n" not in data:
            chunk = await stream.receive_some()
            if not chunk:
                break
            data += chunk
    return int(data.split(b" ", 2)[1])


class Raw:
    """A WebSocket speaking frames by hand: for security, fuzz and backpressure tests."""

    def __init__(self, ws: WebSocketConnection) -> None:
        self.ws = ws
        self.events: list[dict[str, Any]] = []
        self._ids = 0

    async def send(self, frame: Any) -> None:
        await self.ws.send_message(frame if isinstance(frame, (bytes, str)) else msgpack.packb(frame))

    async def receive(self) -> dict[str, Any]:
        with trio.fail_after(WAIT_S):
            return msgpack.unpackb(await self.ws.get_message(), raw=False)  # type: ignore[no-any-return]

    async def response(self) -> dict[str, Any]:
        """The next response; events met on the way are kept in ``events``."""
        while True:
            message = await self.receive()
            if "events" in message:
                self.events.extend(message["events"])
            elif "event" in message:
                self.events.append(message)
            else:
                return message

    async def request(self, op: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self._ids += 1
        await self.send({"id": self._ids, "op": op, "params": params or {}})
        response = await self.response()
        assert response["id"] == self._ids, response
        return response

    async def hello(self, token: str) -> dict[str, Any]:
        return await self.request("hello", {"protocol": 1, "token": token})


async def closed_with(raw: Raw) -> int:
    """Read until the daemon closes the WebSocket; its close code."""
    from trio_websocket import ConnectionClosed

    with trio.fail_after(WAIT_S):
        try:
            while True:
                await raw.ws.get_message()
        except ConnectionClosed as closed:
            return int(closed.reason.code)


@asynccontextmanager
async def raw_connection(
    daemon: Any, transport: str = "unix", *, host: str = "localhost", headers: list[tuple[bytes, bytes]] | None = None
) -> AsyncIterator[Raw]:
    async with trio.open_nursery() as nursery:
        stream = await open_stream(daemon, transport)
        ws = await wrap_client_stream(nursery, stream, host, "/v1", extra_headers=headers or [], max_message_size=1 << 30)
        try:
            yield Raw(ws)
        finally:
            with trio.move_on_after(2):
                await ws.aclose()
            nursery.cancel_scope.cancel()


class ServeProcess:
    """``echsd serve --provider mock`` as a subprocess; stderr drained by a thread.

    ``nofile`` runs it with that ``RLIMIT_NOFILE`` (as under ``ulimit -n``)."""

    def __init__(self, state_dir: Path, *extra: str, nofile: int | None = None) -> None:
        import subprocess
        import sys
        import threading

        env = {**os.environ, "ECHS_STATE_DIR": str(state_dir), "HOME": str(state_dir.parent), "CODEX_HOME": str(state_dir.parent / "no-codex")}
        env.pop("OPENAI_API_KEY", None)
        store = store_url_for(state_dir)
        if store is not None:
            env["ECHS_STORE"] = store
        self.state_dir = state_dir
        self.command = [sys.executable, "-c", "from echsd.cli.echsd_main import main; main()", "serve", "--provider", "mock", *extra]
        self.env = env
        self.lines: list[str] = []
        self.ready = threading.Event()

        def limit_descriptors() -> None:
            if nofile is not None:
                import resource

                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

        self.process = subprocess.Popen(
            self.command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, preexec_fn=limit_descriptors
        )
        threading.Thread(target=self._drain, daemon=True).start()
        if not self.ready.wait(WAIT_S):
            self.stop()
            raise AssertionError("echsd serve did not start:\n" + "".join(self.lines))

    def _drain(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line)
            if "echsd ready" in line:
                self.ready.set()

    def stop(self) -> int:
        self.process.terminate()
        return self.process.wait(WAIT_S)

    def sigkill(self) -> None:
        """Die as in a crash (SIGKILL: nothing is flushed or closed), and be reaped."""
        self.process.kill()
        self.process.wait(WAIT_S)

    @property
    def open_descriptors(self) -> int:
        return len(os.listdir(f"/proc/{self.process.pid}/fd"))

    @property
    def rss_bytes(self) -> int:
        with open(f"/proc/{self.process.pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        raise AssertionError("no VmRSS")


def upgrade_request(host: str = "localhost", path: str = "/v1", headers: tuple[str, ...] = ()) -> bytes:
    """A WebSocket opening handshake, written by hand (for clients that misbehave)."""
    key = base64.b64encode(os.urandom(16)).decode()
    lines = [f"GET {path} HTTP/1.1", f"Host: {host}", "Upgrade: websocket", "Connection: Upgrade", f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Version: 13", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def binary_frame_header(length: int) -> bytes:
    """The header of one final binary client frame of ``length`` bytes, masked with a zero
    key (so the payload goes as is)."""
    if length < 126:
        return bytes((0x82, 0x80 | length)) + b"\0\0\0\0"
    if length < 1 << 16:
        return bytes((0x82, 0x80 | 126)) + length.to_bytes(2, "big") + b"\0\0\0\0"
    return bytes((0x82, 0x80 | 127)) + length.to_bytes(8, "big") + b"\0\0\0\0"
