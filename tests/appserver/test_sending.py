"""Several app-server messages in few socket writes: each still its own frame, in order."""

from __future__ import annotations

from typing import Any

import pytest
import trio
from trio_websocket import ConnectionClosed, serve_websocket, open_websocket_url

from echsd.appserver import sending
from echsd.appserver.sending import send_frames


async def _pair(nursery: trio.Nursery, handler: Any) -> str:
    servers = await nursery.start(serve_websocket, handler, "127.0.0.1", 0, None)
    return f"ws://127.0.0.1:{servers.port}/"


@pytest.mark.parametrize("write_bytes", [256 * 1024, 1])
async def test_every_message_arrives_alone_and_in_order(nursery: trio.Nursery, monkeypatch: pytest.MonkeyPatch, write_bytes: int) -> None:
    monkeypatch.setattr(sending, "WRITE_BYTES", write_bytes)  # 1: one frame per write
    messages = [f'{{"n": {i}, "pad": "{"x" * (i % 97)}"}}' for i in range(2000)]
    done = trio.Event()

    async def handler(request: Any) -> None:
        ws = await request.accept()
        await send_frames(ws, messages)
        await done.wait()

    url = await _pair(nursery, handler)
    async with open_websocket_url(url) as client:
        received = [await client.get_message() for _ in messages]
        done.set()
    assert received == messages


async def test_a_closed_connection_raises_connection_closed(nursery: trio.Nursery) -> None:
    outcome: list[BaseException] = []
    closed, raised = trio.Event(), trio.Event()

    async def handler(request: Any) -> None:
        ws = await request.accept()
        await closed.wait()
        with trio.fail_after(5):
            while True:
                try:
                    await send_frames(ws, ["x" * 1000] * 100)
                except ConnectionClosed as exc:
                    outcome.append(exc)
                    raised.set()
                    return

    url = await _pair(nursery, handler)
    async with open_websocket_url(url) as client:
        await client.aclose()
    closed.set()
    with trio.fail_after(5):
        await raised.wait()
    assert isinstance(outcome[0], ConnectionClosed)


class OneByOne:
    """A WebSocket without trio-websocket's internals: only send_message."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    async def send_message(self, message: str) -> None:
        self.sent.append(message)


async def test_without_the_internals_messages_go_one_by_one() -> None:
    ws = OneByOne()
    await send_frames(ws, ["a", "b", "c"])
    assert ws.sent == ["a", "b", "c"]
