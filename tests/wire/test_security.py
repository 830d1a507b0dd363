"""The doors: token, hello first, Origin and Host checks, socket permissions, one daemon per socket."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
import trio
from trio_websocket import ConnectionClosed

from echsd.wire.client import WireError, connect
from echsd.wire.listeners import ListenError
from tests.wire.helpers import WAIT_S, ServeProcess, closed_with, http_status, open_stream, raw_connection, start_daemon, stop_daemon, token_of


async def test_no_token_wrong_token_and_request_before_hello(wired: Any) -> None:
    async with raw_connection(wired) as raw:
        answer = await raw.request("status")
        assert answer["error"]["code"] == "unauthorized" and "hello" in answer["error"]["message"]
        assert await closed_with(raw) == 1008
    async with raw_connection(wired) as raw:
        answer = await raw.request("hello", {"protocol": 1, "token": "wrong"})
        assert answer["error"]["code"] == "unauthorized"
        assert await closed_with(raw) == 1008
    async with raw_connection(wired) as raw:
        answer = await raw.request("hello", {"protocol": 1})
        assert answer["error"]["code"] == "unauthorized" and "token" in answer["error"]["message"]
        assert await closed_with(raw) == 1008
    async with raw_connection(wired) as raw:
        await raw.send(b"\xc1garbage")
        assert (await raw.response())["error"]["code"] == "unauthorized"
        assert await closed_with(raw) == 1008
    async with raw_connection(wired) as raw:
        answer = await raw.request("hello", {"protocol": 2, "token": token_of(wired)})
        assert answer["error"]["code"] == "unauthorized" and "protocol" in answer["error"]["message"]
    with pytest.raises(WireError) as info:
        async with connect(state_dir=wired.settings.state_dir, token="wrong-token"):
            pass
    assert info.value.code == "unauthorized"
    async with raw_connection(wired) as raw:
        assert (await raw.hello(token_of(wired)))["ok"]


async def test_rotation_applies_to_new_connections_only(wired: Any) -> None:
    from echsd.wire.token import rotate_token

    state = wired.settings.state_dir
    old = token_of(wired)
    async with connect(state_dir=state) as before:
        new = rotate_token(state / "token")
        assert (await before.status())["version"]  # open connections keep working
        with pytest.raises(WireError):
            async with connect(state_dir=state, token=old):
                pass
        async with connect(state_dir=state, token=new) as after:
            assert (await after.status())["version"]


@pytest.mark.parametrize("transport", ["unix", "tcp"])
async def test_origin_header_is_refused(wired: Any, transport: str) -> None:
    host = "localhost" if transport == "unix" else "127.0.0.1"
    assert await http_status(await open_stream(wired, transport), host=host, headers=("Origin: http://localhost",)) == 403
    assert await http_status(await open_stream(wired, transport), host=host) == 101


async def test_foreign_host_header_is_refused_on_tcp_only(wired: Any) -> None:
    assert await http_status(await open_stream(wired, "tcp"), host="attacker.example:80") == 403
    assert await http_status(await open_stream(wired, "tcp"), host="localhost:1") == 101
    assert await http_status(await open_stream(wired, "tcp"), host="[::1]") == 101
    assert await http_status(await open_stream(wired, "unix"), host="attacker.example") == 101


async def test_only_v1_exists(wired: Any) -> None:
    assert await http_status(await open_stream(wired, "unix"), path="/") == 404
    assert await http_status(await open_stream(wired, "tcp"), path="/v2", host="127.0.0.1") == 404


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


async def test_socket_is_0600_in_a_0700_dir(wired: Any) -> None:
    state = wired.settings.state_dir
    assert stat.S_ISSOCK(os.lstat(state / "echsd.sock").st_mode)
    assert _mode(state / "echsd.sock") == 0o600
    assert _mode(state) == 0o700
    assert _mode(state / "token") == 0o600


async def test_stale_socket_is_replaced_and_removed_at_exit(tmp_path: Path, mock_upstream: Any, nursery: Any) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o755)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(state / "echsd.sock"))
    dead.close()  # a socket file nobody listens on: a crashed daemon's leftover
    daemon = await start_daemon(nursery, state, mock_upstream.base_url, tcp=False)
    assert _mode(state) == 0o700 and _mode(state / "echsd.sock") == 0o600
    async with connect(state_dir=state) as client:
        assert await client.status()
    await stop_daemon(daemon)
    assert not (state / "echsd.sock").exists()


async def test_live_socket_refuses_a_second_daemon(wired: Any, mock_upstream: Any, nursery: Any) -> None:
    with pytest.raises(ListenError, match="already running"):
        await start_daemon(nursery, wired.settings.state_dir, mock_upstream.base_url, tcp=False)
    async with connect(state_dir=wired.settings.state_dir) as client:  # the first one is untouched
        assert await client.status()


async def test_socket_answered_by_another_process_is_not_stolen(tmp_path: Path, mock_upstream: Any, nursery: Any) -> None:
    state = tmp_path / "state"
    state.mkdir()
    listener = trio.socket.socket(trio.socket.AF_UNIX, trio.socket.SOCK_STREAM)
    await listener.bind(str(state / "echsd.sock"))
    listener.listen(1)
    try:
        with pytest.raises(ListenError, match="already running"):
            await start_daemon(nursery, state, mock_upstream.base_url, tcp=False)
    finally:
        listener.close()
    assert not (state / "echsd.db").exists()  # refused before touching the store


def test_echsd_serve_refuses_when_a_daemon_runs(tmp_path: Path) -> None:
    first = ServeProcess(tmp_path / "state")
    try:
        second = subprocess.run(first.command, env=first.env, capture_output=True, text=True, timeout=WAIT_S)
        assert second.returncode != 0
        assert "already running" in second.stderr
    finally:
        assert first.stop() == 0
