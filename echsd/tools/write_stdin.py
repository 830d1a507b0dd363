"""``write_stdin``: type into an exec session, or poll it, as Codex's tool of that name.

``chars`` goes to the session's pty (a session started without ``tty`` has no stdin, as in
Codex); empty ``chars`` just waits for output (5 s to 300 s). The call returns after
``yield_time_ms`` (default 250 ms, up to 30 s) or as soon as the command exits, with the
output that arrived since the last call and, once the command has exited, its exit code.
"""

from __future__ import annotations

from typing import Any

from echsd.tools import exec_args
from echsd.tools.base import ToolContext, ToolResult, ToolSpec
from echsd.tools.exec_command import result_of
from echsd.tools.session_tool import SessionTool

SPEC = ToolSpec(
    name="write_stdin",
    description="Writes characters to a running exec_command session and returns its recent output (and its exit code once it has exited).",
    parameters={
        "type": "object",
        "properties": {
            "session_id": {"type": "number", "description": "The session ID exec_command returned."},
            "chars": {"type": "string", "description": "Characters to write (e.g. 'ls\\n', or '\\u0003' for Ctrl-C). Empty or omitted: only wait for output."},
            "yield_time_ms": {
                "type": "number",
                "description": "How long to wait for output. Defaults to 250 ms, at most 30000 ms; an empty poll waits 5000-300000 ms.",
            },
            "max_output_tokens": exec_args.MAX_OUTPUT_TOKENS_PROPERTY,
        },
        "required": ["session_id"],
        "additionalProperties": False,
    },
    writes=True,  # runs (or types into) arbitrary commands
)


class WriteStdin(SessionTool):
    spec = SPEC

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        chars = args.get("chars") or ""
        session_id = exec_args.session_id(args)
        yield_s = exec_args.write_stdin_yield_s(args, chars, ctx.timeout_s)
        max_tokens = exec_args.max_output_tokens(args)
        report = await self.sessions_of(ctx).write_stdin(session_id, chars, yield_s=yield_s, max_tokens=max_tokens, emit=self.emitter(ctx))
        return result_of(report)
