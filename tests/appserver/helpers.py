"""App-server test helpers: a daemon with the listener, and a client that speaks like the TUI.

``AppClient`` is a real WebSocket client (over the unix socket, or TCP with the bearer
token) that sends what the Codex TUI sends and checks *every* message the server sends
against the protocol's JSON Schema (``protocol_schema``); a violation fails the test.
"""

from __future__ import annotations

import itertools
import uuid
import json
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator, Callable

import trio
from trio_websocket import ConnectionClosed, WebSocketConnection, wrap_client_stream
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, CloseConnection, Ping, Request as WsRequest, TextMessage

from tests.appserver.protocol_schema import ProtocolViolation, check_server_message
from tests.helpers import make_settings

WAIT_S = 15.0


async def start_daemon(nursery: trio.Nursery, state_dir: Path, base_url: str | None, *, tuning: dict[str, Any] | None = None) -> Any:
    """An in-process daemon with app-server listeners on ``<state>/app/app.sock`` and TCP."""
    from echsd.daemon import Daemon

    state_dir.mkdir(parents=True, exist_ok=True)
    if tuning:
        lines = ["[tuning]", *(f"{key} = {value!r}" for key, value in tuning.items())]
        (state_dir / "config.toml").write_text("\n".join(lines) + "\n")
    settings = make_settings(
        state_dir,
        base_url,
        listen=[f"unix://{state_dir / 'echsd.sock'}"],
        app_server=[f"unix://{state_dir / 'app' / 'app.sock'}", "ws://127.0.0.1:0"],
    )
    daemon = Daemon(settings)
    await nursery.start(daemon.run)
    return daemon


async def eventually(condition: Callable[[], object], timeout: float = WAIT_S) -> None:
    """Poll ``condition`` until it holds: for what the daemon signals to nobody (a thread
    deleted when a client left)."""
    with trio.fail_after(timeout):
        while not condition():
            await trio.sleep(0.01)


def tcp_port(daemon: Any) -> int:
    url = next(u for u in daemon.app_server.urls if u.startswith("ws://"))
    return int(url.rsplit(":", 1)[1])


def token_of(daemon: Any) -> str:
    return (daemon.settings.state_dir / "token").read_text().strip()


class RpcFailed(Exception):
    def __init__(self, method: str, error: dict[str, Any]) -> None:
        super().__init__(f"{method}: {error}")
        self.code = error.get("code")
        self.message = error.get("message", "")


class AppClient:
    def __init__(self, ws: WebSocketConnection) -> None:
        self.ws = ws
        self.messages: list[dict[str, Any]] = []  # everything the server sent, in order
        self.violations: list[str] = []
        self._requested: dict[Any, str] = {}
        self._responses: dict[Any, dict[str, Any]] = {}
        self._changed = trio.Event()
        self._ids = itertools.count(1)

    async def read_forever(self) -> None:
        try:
            while True:
                text = await self.ws.get_message()
                message = json.loads(text)
                try:
                    check_server_message(message, self._requested)
                except ProtocolViolation as exc:
                    self.violations.append(str(exc))
                self.messages.append(message)
                if "id" in message and "method" not in message:
                    self._responses[message["id"]] = message
                self._changed.set()
                self._changed = trio.Event()
        except ConnectionClosed:
            self._changed.set()

    async def send(self, message: dict[str, Any]) -> None:
        if "method" in message and "id" in message:
            self._requested[message["id"]] = message["method"]
        await self.ws.send_message(json.dumps(message))

    async def start(self, method: str, params: dict[str, Any] | None = None, request_id: Any = None) -> Any:
        """Send a request without waiting; returns its id."""
        request_id = next(self._ids) if request_id is None else request_id
        await self.send({"id": request_id, "method": method, "params": params if params is not None else {}})
        return request_id

    async def response(self, request_id: Any, timeout: float = WAIT_S) -> dict[str, Any]:
        with trio.fail_after(timeout):
            while request_id not in self._responses:
                await self._changed.wait()
        return self._responses[request_id]

    async def call(self, method: str, params: dict[str, Any] | None = None, request_id: Any = None) -> Any:
        """Request and wait for the result; an error answer raises ``RpcFailed``."""
        response = await self.response(await self.start(method, params, request_id))
        if "error" in response:
            raise RpcFailed(method, response["error"])
        return response["result"]

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        await self.send({"method": method, **({"params": params} if params is not None else {})})

    async def answer(self, request_id: Any, result: dict[str, Any]) -> None:
        await self.ws.send_message(json.dumps({"id": request_id, "result": result}))

    def index_of(self, predicate: Callable[[dict[str, Any]], bool], after: int = 0) -> int | None:
        for index in range(after, len(self.messages)):
            if predicate(self.messages[index]):
                return index
        return None

    async def wait_for(self, predicate: Callable[[dict[str, Any]], bool], after: int = 0, timeout: float = WAIT_S) -> dict[str, Any]:
        with trio.fail_after(timeout):
            while True:
                index = self.index_of(predicate, after)
                if index is not None:
                    return self.messages[index]
                await self._changed.wait()

    async def notification(self, method: str, after: int = 0, timeout: float = WAIT_S, **params: Any) -> dict[str, Any]:
        """The first ``method`` notification (from message ``after`` on) whose params match."""
        message = await self.wait_for(
            lambda m: m.get("method") == method and "id" not in m and _matches(m.get("params") or {}, params), after, timeout
        )
        return message["params"]  # type: ignore[no-any-return]

    async def server_request(self, method: str, after: int = 0, timeout: float = WAIT_S) -> dict[str, Any]:
        return await self.wait_for(lambda m: m.get("method") == method and "id" in m, after, timeout)

    def of_method(self, method: str) -> list[dict[str, Any]]:
        return [m["params"] for m in self.messages if m.get("method") == method and "id" not in m]

    async def initialize(self) -> dict[str, Any]:
        """What the TUI does first (``initialize`` has a string id there)."""
        result = await self.call(
            "initialize",
            {
                "clientInfo": {"name": "codex-tui", "title": None, "version": "0.169.0"},
                "capabilities": {"requiredHumanApproval": True, "experimentalApi": True, "optOutNotificationMethods": None},
            },
            request_id="initialize",
        )
        await self.notify("initialized")
        return result  # type: ignore[no-any-return]

    async def start_thread(self, **params: Any) -> dict[str, Any]:
        return await self.call("thread/start", {"model": None, "cwd": None, "approvalPolicy": None, **params})  # type: ignore[no-any-return]

    async def run_turn(self, thread_id: str, text: str, client_id: str | None = None) -> str:
        """Start a turn as the TUI does (a fresh client message id each time); its id."""
        result = await self.call("turn/start", user_input(thread_id, text, client_id or str(uuid.uuid4())))
        return str(result["turn"]["id"])


def _matches(params: dict[str, Any], wanted: dict[str, Any]) -> bool:
    return all(params.get(key) == value for key, value in wanted.items())


def user_input(thread_id: str, text: str, client_id: str | None = None) -> dict[str, Any]:
    """``turn/start`` params as the TUI sends them."""
    return {
        "threadId": thread_id,
        "clientUserMessageId": client_id,
        "input": [{"type": "text", "text": text, "text_elements": []}],
        "turnTrigger": "user",
        "cwd": None,
        "approvalPolicy": "on-request",
        "model": None,
        "effort": None,
    }


@asynccontextmanager
async def app_client(daemon: Any, transport: str = "unix", *, headers: list[tuple[bytes, bytes]] | None = None) -> AsyncIterator[AppClient]:
    """A connected client; at the end, every message it got must have matched the schema."""
    async with trio.open_nursery() as nursery:
        if transport == "unix":
            stream = await trio.open_unix_socket(str(daemon.settings.state_dir / "app" / "app.sock"))
            ws = await wrap_client_stream(nursery, stream, "localhost", "/rpc", extra_headers=headers or [])
        else:
            stream = await trio.open_tcp_stream("127.0.0.1", tcp_port(daemon))
            auth = [(b"authorization", f"Bearer {token_of(daemon)}".encode())]
            ws = await wrap_client_stream(nursery, stream, "127.0.0.1", "/", extra_headers=headers if headers is not None else auth)
        client = AppClient(ws)
        nursery.start_soon(client.read_forever)
        try:
            yield client
        finally:
            with trio.move_on_after(2):
                await ws.aclose()
            nursery.cancel_scope.cancel()
        assert not client.violations, "\n\n".join(client.violations)


class HalfOpenClient:
    """A client that never answers a ping (it reads frames but sends no pong): a peer
    whose machine went away without closing, as the heartbeat sees it."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.ws = WSConnection(ConnectionType.CLIENT)
        self.pings = 0

    async def open(self) -> None:
        await self.stream.send_all(self.ws.send(WsRequest(host="localhost", target="/rpc")))
        await self._until(lambda event: isinstance(event, AcceptConnection))

    async def call(self, request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        message = json.dumps({"id": request_id, "method": method, "params": params})
        await self.stream.send_all(self.ws.send(TextMessage(data=message)))
        answer = await self._until(lambda event: isinstance(event, TextMessage) and json.loads(event.data).get("id") == request_id)
        return json.loads(answer.data)  # type: ignore[no-any-return]

    async def closed_by_server(self) -> None:
        """Read (and answer nothing) until the daemon closes the connection."""
        try:
            await self._until(lambda event: isinstance(event, CloseConnection))
        except EOFError:
            pass

    async def _until(self, wanted: Callable[[Any], bool]) -> Any:
        while True:
            for event in self.ws.events():
                self.pings += isinstance(event, Ping)
                if wanted(event):
                    return event
            data = await self.stream.receive_some(65536)
            if not data:
                raise EOFError("the daemon closed the socket")
            self.ws.receive_data(data)


@asynccontextmanager
async def half_open_client(daemon: Any) -> AsyncIterator[HalfOpenClient]:
    stream = await trio.open_unix_socket(str(daemon.settings.state_dir / "app" / "app.sock"))
    async with stream:
        client = HalfOpenClient(stream)
        await client.open()
        yield client
