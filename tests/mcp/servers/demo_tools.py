"""The tools of the demo MCP server the tests (and the README's example) use, written with the
official SDK. Each one exercises one thing a client must handle: text, structured content,
an image, a failure (``isError``), progress, a crash mid-call, a call that never ends, a
tool list that changes, a tool that writes a file.
"""

from __future__ import annotations

import io
import os
import socket
from pathlib import Path

import anyio
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import BaseModel


class Counts(BaseModel):
    words: int
    characters: int


def build(name: str = "demo") -> MCPServer:
    server = MCPServer(name, instructions="A small demo server: text, numbers, a picture, and ways to fail.")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True), structured_output=False)
    def echo(text: str) -> str:
        """Says the text back."""
        return text

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def word_count(text: str) -> Counts:
        """Counts the words and characters of a text."""
        return Counts(words=len(text.split()), characters=len(text))

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def swatch(color: str = "red", size: int = 16) -> Image:
        """A square PNG picture filled with one colour."""
        from PIL import Image as Picture

        out = io.BytesIO()
        Picture.new("RGB", (size, size), color).save(out, "PNG")
        return Image(data=out.getvalue(), format="png")

    @server.tool(structured_output=False)
    def fail(reason: str) -> str:
        """Always fails, saying why."""
        raise ToolError(f"refused: {reason}")

    @server.tool(structured_output=False)
    async def slow(steps: int, ctx: Context) -> str:
        """Takes a while, reporting its progress at every step."""
        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps, f"step {step}")
            await anyio.sleep(0.01)
        return f"done after {steps} steps"

    @server.tool(structured_output=False)
    def crash() -> str:
        """Makes the server exit in the middle of the call."""
        os._exit(3)

    @server.tool(structured_output=False)
    async def hang() -> str:
        """Never answers."""
        await anyio.sleep_forever()
        return "unreachable"

    @server.tool(annotations=ToolAnnotations(read_only_hint=True), structured_output=False)
    def whoami() -> str:
        """The server's process id (it changes when the server is started again)."""
        return str(os.getpid())

    @server.tool(structured_output=False)
    async def grow(tool: str, ctx: Context) -> str:
        """Adds a tool of that name (which says the text back) and tells the client its tool list changed."""

        def added(text: str) -> str:
            return f"{tool}: {text}"

        server.add_tool(added, name=tool, structured_output=False, description=f"The {tool} tool, added while the server ran.")
        await ctx.session.send_tool_list_changed()
        return f"added {tool}"

    @server.tool(structured_output=False)
    def touch(path: str, text: str = "") -> str:
        """Writes a file."""
        Path(path).write_text(text)
        return f"wrote {path}"

    @server.tool(annotations=ToolAnnotations(read_only_hint=True), structured_output=False)
    def peek(path: str) -> str:
        """Reads a file."""
        return Path(path).read_text()

    @server.tool(annotations=ToolAnnotations(read_only_hint=True), structured_output=False)
    def dial(port: int, host: str = "127.0.0.1") -> str:
        """Opens a TCP connection and closes it again."""
        with socket.create_connection((host, port), timeout=5):
            return f"connected to {host}:{port}"

    @server.tool(structured_output=False)
    def babble(lines: int = 1) -> str:
        """Writes lines that are not JSON-RPC messages on its stdout (the protocol's channel), then answers."""
        for number in range(lines):
            os.write(1, f"not a message {number}\n".encode())
        return f"babbled {lines} lines"

    return server
