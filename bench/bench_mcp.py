"""An MCP tool call's overhead over a plain built-in tool call (issue 23), beside the raw limit.

The demo MCP server of the tests (``tests/mcp/servers/stdio_server.py``, the SDK's
``MCPServer``) over stdio, started as the daemon starts it. Variants run interleaved, one
call each in turn, so that all see the same load:

- ``builtin``: ``read_file`` of a one-line file through the tool (a cheap built-in call);
- ``mcp``: ``mcp__demo__echo`` through echsd's tool, session and transport;
- ``raw``: the same ``echo`` called with the SDK's own client and its stdio transport,
  nothing of echsd: the fastest way to make that call, the raw limit.

``overhead_p50_ms`` is ``mcp`` minus ``builtin`` (what an MCP call costs a turn beyond a
built-in one); ``mcp_over_raw_p50_ms`` what echsd adds to the SDK's own call. Then the
same through the whole tool loop: a turn of the in-process daemon (mock model) with one
call of each kind, ``turn_overhead_p50_ms`` the difference. Options: ``--runs=N``
(default 300 tool calls, a sixth of that in turns).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any, Awaitable, Callable

import trio

from bench.in_process import daemon_on_mock
from bench.interleave import interleaved, summaries

SERVER = Path(__file__).resolve().parent.parent / "tests" / "mcp" / "servers" / "stdio_server.py"


def _runs_option(argv: list[str]) -> int:
    for arg in argv:
        if arg.startswith("--runs="):
            return int(arg.split("=", 1)[1])
    return 300


async def tool_calls(runs: int) -> dict[str, Any]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    from echsd.mcp.config import load_mcp_servers
    from echsd.mcp.servers import McpServers
    from echsd.tools.base import ToolContext
    from echsd.tools.process import become_subreaper
    from echsd.tools.read_file import ReadFile

    become_subreaper()
    with tempfile.TemporaryDirectory(prefix="echsd-bench-mcp-") as scratch:
        small = Path(scratch) / "small.txt"
        small.write_text("hello\n")

        async def sink(stream: str, chunk: str) -> None:
            return None

        ctx = ToolContext("thr_bench", "turn_bench", "call_bench", Path(scratch), sink, 60.0)
        servers = McpServers(load_mcp_servers({"demo": {"command": sys.executable, "args": [str(SERVER)]}}, "bench"), scratch)
        read_file = ReadFile()
        async with trio.open_nursery() as nursery:
            await nursery.start(servers.run)
            await servers.prepare(["demo"])
            echo = next(tool for tool in servers.tools(["demo"]) if tool.spec.name == "mcp__demo__echo")
            params = StdioServerParameters(command=sys.executable, args=[str(SERVER)])
            async with Client(params, mode="legacy") as raw:
                variants: dict[str, Callable[[], Awaitable[object]]] = {
                    "builtin": lambda: read_file.run({"file_path": str(small)}, ctx),
                    "mcp": lambda: echo.run({"text": "hi"}, ctx),
                    "raw": lambda: raw.call_tool("echo", {"text": "hi"}),
                }
                samples = await interleaved(variants, runs)
            nursery.cancel_scope.cancel()
    result: dict[str, Any] = {"runs": runs}
    result.update(summaries(samples))
    result["overhead_p50_ms"] = round(result["mcp_p50_ms"] - result["builtin_p50_ms"], 3)
    result["mcp_over_raw_p50_ms"] = round(result["mcp_p50_ms"] - result["raw_p50_ms"], 3)
    return result


async def turns(runs: int) -> dict[str, Any]:
    """One turn with one call, through the in-process daemon on the mock model."""
    from bench.bench_threads import directive

    with tempfile.TemporaryDirectory(prefix="echsd-bench-mcp-") as scratch:
        state = Path(scratch) / "state"
        state.mkdir()
        (state / "config.toml").write_text(f'[mcp_servers.demo]\ncommand = "{sys.executable}"\nargs = ["{SERVER}"]\n')
        small = Path(scratch) / "small.txt"
        small.write_text("hello\n")
        async with daemon_on_mock(state, scratch) as (daemon, _mock):
            thread_id = (await daemon.ops.create_thread(cwd=scratch))["thread_id"]

            async def one_turn(name: str, arguments: dict[str, Any]) -> None:
                ended = trio.Event()
                closing = daemon.hub.listen(thread_id, lambda event: ended.set() if event.type == "turn.completed" else None)
                try:
                    steps = [{"calls": [{"name": name, "arguments": arguments}]}, {"text": "ok"}]
                    await daemon.ops.send(thread_id, directive(steps))
                    await ended.wait()
                finally:
                    closing.close()

            variants: dict[str, Callable[[], Awaitable[object]]] = {
                "turn_builtin": lambda: one_turn("read_file", {"file_path": str(small)}),
                "turn_mcp": lambda: one_turn("mcp__demo__echo", {"text": "hi"}),
            }
            samples = await interleaved(variants, runs)
    result: dict[str, Any] = {"turn_runs": runs}
    result.update(summaries(samples))
    result["turn_overhead_p50_ms"] = round(result["turn_mcp_p50_ms"] - result["turn_builtin_p50_ms"], 3)
    return result


def main(argv: list[str]) -> dict[str, Any]:
    runs = _runs_option(argv)
    result = trio.run(tool_calls, runs)
    result.update(trio.run(turns, max(10, runs // 6)))
    return result


if __name__ == "__main__":
    import json

    print(json.dumps(main(sys.argv[1:]), indent=2))
