"""The MCP SDK runs on trio (anyio picks trio's backend from the running loop): its stdio and
streamable-HTTP client transports, against the demo server it also serves, including a call
cancelled by a trio cancel scope (the session goes on serving)."""

from __future__ import annotations

import sys
import trio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.mcp.conftest import STDIO_SERVER, HttpServer, start_http_server


async def exercise(client: Client) -> None:
    import sniffio

    assert sniffio.current_async_library() == "trio"
    tools = {tool.name for tool in (await client.list_tools()).tools}
    assert {"echo", "hang", "slow"} <= tools
    assert (await client.call_tool("echo", {"text": "on trio"})).content[0].text == "on trio"
    with trio.move_on_after(0.5) as scope:
        await client.call_tool("hang", {})
    assert scope.cancelled_caught  # the cancel scope ended the call; anyio raised trio's Cancelled
    progress: list[float] = []

    async def seen(done: float, total: float | None, message: str | None) -> None:
        progress.append(done)

    result = await client.call_tool("slow", {"steps": 3}, progress_callback=seen)
    assert result.content[0].text == "done after 3 steps"
    with trio.fail_after(5):  # progress callbacks run in tasks of their own
        while len(progress) < 3:
            await trio.sleep(0.01)
    assert sorted(progress) == [1, 2, 3]


async def test_the_stdio_client_transport_on_trio() -> None:
    params = StdioServerParameters(command=sys.executable, args=[str(STDIO_SERVER)])
    with trio.fail_after(30):
        async with Client(params, mode="legacy") as client:
            await exercise(client)
        async with Client(params) as client:  # the 2026 revision (discover, no handshake)
            await exercise(client)


async def test_the_streamable_http_client_transport_on_trio() -> None:
    server: HttpServer = start_http_server(token=None)
    try:
        with trio.fail_after(30):
            async with Client(server.url, mode="legacy") as client:
                await exercise(client)
            async with Client(server.url) as client:
                await exercise(client)
    finally:
        server.process.kill()
        server.process.wait()
