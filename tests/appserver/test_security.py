"""The listener's doors: the bearer token on TCP, Origin and Host checks, the unix socket's
mode; and bad frames answered clearly without harm."""

from __future__ import annotations

import json
import os
import stat
from typing import Any

import pytest
import trio
from trio_websocket import ConnectionClosed

from echsd.wire.token import rotate_token
from tests.appserver.helpers import AppClient, app_client, tcp_port, token_of
from tests.wire.helpers import http_status


async def _status(appd: Any, transport: str, path: str, host: str = "localhost", headers: tuple[str, ...] = ()) -> int:
    if transport == "unix":
        stream = await trio.open_unix_socket(str(appd.settings.state_dir / "app" / "app.sock"))
    else:
        stream = await trio.open_tcp_stream("127.0.0.1", tcp_port(appd))
    async with stream:
        return await http_status(stream, path=path, host=host, headers=headers)


async def test_tcp_needs_the_bearer_token(appd: Any) -> None:
    token = token_of(appd)
    assert await _status(appd, "tcp", "/") == 401
    assert await _status(appd, "tcp", "/", headers=("Authorization: Bearer not-the-token",)) == 401
    assert await _status(appd, "tcp", "/", headers=("Authorization: Basic " + token,)) == 401
    assert await _status(appd, "tcp", "/", headers=(f"Authorization: Bearer {token}",)) == 101


async def test_a_rotated_token_applies_to_new_connections(appd: Any) -> None:
    old = token_of(appd)
    rotate_token(appd.settings.token_path)
    assert await _status(appd, "tcp", "/", headers=(f"Authorization: Bearer {old}",)) == 401
    assert await _status(appd, "tcp", "/", headers=(f"Authorization: Bearer {token_of(appd)}",)) == 101


@pytest.mark.parametrize("transport", ["unix", "tcp"])
async def test_browsers_and_foreign_hosts_are_refused(appd: Any, transport: str) -> None:
    auth = f"Authorization: Bearer {token_of(appd)}"
    assert await _status(appd, transport, "/", headers=(auth, "Origin: http://evil.example")) == 403
    foreign = await _status(appd, transport, "/", host="evil.example:80", headers=(auth,))
    assert foreign == (403 if transport == "tcp" else 101)  # on the unix socket any Host is fine
    assert await _status(appd, transport, "/v1", headers=(auth,)) == 404
    assert await _status(appd, transport, "/rpc", headers=(auth,)) == 101


async def test_the_unix_socket_is_private(appd: Any) -> None:
    path = appd.settings.state_dir / "app" / "app.sock"
    assert stat.S_ISSOCK(os.lstat(path).st_mode)
    assert stat.S_IMODE(os.lstat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700


async def test_bad_frames_get_clear_answers_and_change_nothing(client: AppClient) -> None:
    await client.ws.send_message("{not json")
    warning = await client.notification("warning")
    assert "not JSON" in warning["message"]
    await client.ws.send_message("[1, 2]")
    await client.wait_for(lambda m: m.get("method") == "warning" and "one JSON object" in m["params"]["message"])
    await client.ws.send_message(json.dumps({"id": 5, "method": "account/read", "params": [1]}))
    assert (await client.response(5))["error"]["code"] == -32602
    await client.ws.send_message(json.dumps({"id": 6}))
    assert (await client.response(6))["error"]["code"] == -32600
    await client.ws.send_message(json.dumps({"id": 1.5, "method": "account/read"}))
    await client.wait_for(lambda m: m.get("method") == "warning" and "integer or a string" in m["params"]["message"])
    assert (await client.call("account/read", {}))["account"] is None  # the connection goes on


async def test_a_frame_over_the_size_limit_closes_the_connection(appd: Any) -> None:
    async with app_client(appd) as client:
        await client.initialize()
        limit = appd.settings.tuning.max_message_bytes
        with pytest.raises(ConnectionClosed):
            await client.ws.send_message("x" * (limit + 1))
            with trio.fail_after(5):
                await client.ws.get_message()
    async with app_client(appd) as again:
        await again.initialize()  # the daemon is fine



async def test_invalid_utf8_text_closes_with_1007(appd: Any) -> None:
    """A text frame that is not UTF-8 fails the connection with close code 1007 (RFC 6455
    7.4.1), sent before the socket closes; the daemon goes on serving."""
    from wsproto import ConnectionType, WSConnection
    from wsproto.events import AcceptConnection, CloseConnection, Request

    stream = await trio.open_unix_socket(str(appd.settings.state_dir / "app" / "app.sock"))
    async with stream:
        ws = WSConnection(ConnectionType.CLIENT)
        await stream.send_all(ws.send(Request(host="localhost", target="/rpc")))
        events: list[Any] = []
        payload, mask = b'{"id": 1, "method": "\xff\xfe"}', b"\x11\x22\x33\x44"
        frame = bytes([0x81, 0x80 | len(payload)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        with trio.fail_after(5):
            while not any(isinstance(e, CloseConnection) for e in events):
                data = await stream.receive_some(65536)
                assert data, f"the daemon closed the socket without a close frame (saw {events})"
                ws.receive_data(data)
                events.extend(ws.events())
                if any(isinstance(e, AcceptConnection) for e in events) and frame:
                    await stream.send_all(frame)  # a raw text frame: wsproto would not encode it
                    frame = b""
    [closed] = [e for e in events if isinstance(e, CloseConnection)]
    assert closed.code == 1007, closed
    async with app_client(appd) as again:
        await again.initialize()
