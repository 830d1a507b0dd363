"""An MCP server's tool as one of echsd's tools (``mcp__<server>__<tool>``).

The spec is the server's: its input schema as the function's parameters (``names.py`` makes
the name valid and caps the description). A tool the server marks read-only
(``readOnlyHint``) counts as not writing, for the ``on-write`` approval policy; every other
one may change anything. A call goes to the server's session with the server's
``tool_timeout_sec`` (or the daemon's tool timeout, whichever is shorter); its progress
notifications are streamed as ``tool.output``; its result is mapped by ``results.py``
(images prepared off the event loop). Whatever goes wrong becomes the call's output.
"""

from __future__ import annotations

from typing import Any

import mcp_types
import trio

from echsd.mcp import names
from echsd.mcp.results import needs_images, to_tool_result
from echsd.mcp.session import CallFailed, McpSession, ServerDown
from echsd.tools.base import ToolContext, ToolResult, ToolSpec
from echsd.tools.prompt_image import prepare


def tool_spec(model_name: str, server: str, tool: mcp_types.Tool, parallel: bool) -> ToolSpec | None:
    """None when the tool cannot be offered (a schema too large)."""
    parameters = names.parameters(tool.input_schema)
    if parameters is None:
        return None
    annotations = tool.annotations
    read_only = bool(annotations is not None and annotations.read_only_hint)
    return ToolSpec(
        name=model_name,
        description=names.description(tool.description, server, tool.name),
        parameters=parameters,
        parallel_safe=parallel,
        writes=not read_only,
    )


class McpTool:
    def __init__(self, spec: ToolSpec, session: McpSession, tool: str, start: Any) -> None:
        self.spec = spec
        self.session = session
        self.tool = tool  # the server's own name for it
        self._start = start  # starts the session's runner if it never ran

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        self._start(self.session)
        timeout_s = min(self.session.config.tool_timeout_s, ctx.timeout_s)

        async def progress(done: float, total: float | None, message: str | None) -> None:
            shown = f"{done:g}/{total:g}" if total else f"{done:g}"
            await ctx.emit_output("progress", f"[{shown}] {message or ''}".rstrip() + "\n")

        try:
            result = await self.session.call(self.tool, args, timeout_s, progress)
        except (ServerDown, CallFailed) as exc:
            return ToolResult(f"error: {exc}", ok=False)
        if needs_images(result):
            return await trio.to_thread.run_sync(to_tool_result, result, prepare)
        return to_tool_result(result, prepare)
