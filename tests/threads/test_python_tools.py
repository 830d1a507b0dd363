"""A Python program that embeds echsd gives the daemon its own tool; the model calls it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

from echsd.daemon import Daemon
from echsd.tools.base import ToolContext, ToolError
from echsd.tools.custom import python_tool
from tests.helpers import Watch, make_settings, mock_directive


async def test_an_embedded_python_tool(tmp_path: Path, mock_upstream: Any, nursery: trio.Nursery, workdir: Path) -> None:
    seen: list[tuple[dict[str, Any], str]] = []

    async def lookup(args: dict[str, Any], ctx: ToolContext) -> str:
        seen.append((args, ctx.thread_id))
        if args["word"] == "nothing":
            raise ToolError("no such word")
        return f"{args['word']}: a small domesticated feline"

    schema = {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}
    daemon = Daemon(make_settings(tmp_path / "state", mock_upstream.base_url), extra_tools=[python_tool("lookup", "Looks a word up.", schema, lookup)])
    await nursery.start(daemon.run)
    tid = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    calls = [{"name": "lookup", "arguments": {"word": "cat"}}, {"name": "lookup", "arguments": {"word": "nothing"}}]
    async with Watch(daemon, tid) as watch:
        await daemon.ops.send(tid, mock_directive([{"calls": calls}, {"text": "ok"}]))
        await watch.wait_type("turn.completed")
    outputs = sorted(e.data["output"] for e in watch.of_type("tool.completed"))
    assert outputs == ["cat: a small domesticated feline", "error: no such word"]
    assert sorted(args["word"] for args, _ in seen) == ["cat", "nothing"] and {thread for _, thread in seen} == {tid}
    daemon.request_stop()
    await daemon.wait_stopped()
