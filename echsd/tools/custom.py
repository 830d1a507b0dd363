"""Tools written in Python by a program that embeds echsd.

``python_tool`` turns a JSON schema and an async handler into a tool; give it to the
daemon (``Daemon(settings, extra_tools=[...])``) and every thread may use it (it joins the
built-ins, so threads list it in their ``tools`` config like any other)::

    async def lookup(args, ctx):
        return f"{args['word']}: a small domesticated feline"

    tool = python_tool("lookup", "Looks a word up.", {"type": "object", "properties":
                       {"word": {"type": "string"}}, "required": ["word"]}, lookup)

The handler gets the checked arguments and the ``ToolContext``; it returns text (or a
``ToolResult``). Raising ``ToolError`` gives the model that message; anything else is
reported as a crash of the tool, and the turn goes on either way.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable

from echsd.tools.base import ToolContext, ToolResult, ToolSpec

Handler = Callable[[dict[str, Any], ToolContext], Awaitable["str | ToolResult"]]


class PythonTool:
    def __init__(self, spec: ToolSpec, handler: Handler) -> None:
        self.spec = spec
        self._handler = handler

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        result = await self._handler(args, ctx)
        return result if isinstance(result, ToolResult) else ToolResult(str(result))


def python_tool(
    name: str,
    description: str,
    parameters: dict[str, Any],
    handler: Handler,
    *,
    parallel_safe: bool = True,
    writes: bool = False,
) -> PythonTool:
    if parameters.get("type") != "object":
        raise ValueError("parameters must be a JSON schema of type object")
    return PythonTool(ToolSpec(name, description, parameters, parallel_safe=parallel_safe, writes=writes), handler)
