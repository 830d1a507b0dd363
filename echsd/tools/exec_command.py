"""``exec_command``: run a shell command in the thread's cwd and return its output.

The command runs in its own process group (see ``process.py``): interrupting the turn,
a timeout or a daemon shutdown kills the whole group. Output streams to clients as
``tool.output`` events while it runs; the model gets the exit code, wall time and the
output (head+tail truncated).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from echsd.tools.base import ToolContext, ToolError, ToolResult, ToolSpec
from echsd.tools.process import run_command, shell_argv
from echsd.tools.truncate import DEFAULT_MAX_CHARS, truncate_middle

STREAMED_OUTPUT_LIMIT = 1024 * 1024  # bytes of tool.output events per call; the model sees head+tail

SPEC = ToolSpec(
    name="exec_command",
    description=(
        "Run a shell command (bash -c) in the thread's working directory and return its exit code "
        "and combined stdout/stderr. The command and everything it starts are killed when it times "
        "out or the turn is interrupted."
    ),
    parameters={
        "type": "object",
        "properties": {
            "cmd": {"type": "string", "description": "The shell command to run."},
            "workdir": {"type": "string", "description": "Directory to run in; relative paths are resolved against the thread's cwd."},
            "timeout_ms": {"type": "integer", "description": "Kill the command after this many milliseconds."},
            "max_output_chars": {"type": "integer", "description": "Truncate the returned output (head+tail) to this many characters."},
        },
        "required": ["cmd"],
        "additionalProperties": False,
    },
    writes=True,
)


class ExecCommand:
    spec = SPEC

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        command = args["cmd"]
        if not command.strip():
            raise ToolError("cmd is empty")
        workdir = _resolve_workdir(ctx.cwd, args.get("workdir"))
        timeout_s = ctx.timeout_s
        if args.get("timeout_ms") is not None:
            if args["timeout_ms"] <= 0:
                raise ToolError("timeout_ms must be positive")
            timeout_s = min(timeout_s, args["timeout_ms"] / 1000)
        max_chars = args.get("max_output_chars") or DEFAULT_MAX_CHARS
        streamed = 0

        async def forward(text: str) -> None:
            nonlocal streamed
            if streamed < STREAMED_OUTPUT_LIMIT:
                streamed += len(text)
                await ctx.emit_output("stdout", text)

        result = await run_command(shell_argv(command), cwd=str(workdir), timeout_s=timeout_s, on_output=forward)
        if result.timed_out:
            status = f"Timed out after {timeout_s:g} s (process group killed)"
        elif result.signal is not None:
            status = f"Killed by signal {result.signal}"
        else:
            status = f"Exit code: {result.exit_code}"
        body = truncate_middle(result.output, max_chars)
        text = f"{status}\nWall time: {result.wall_s:.2f} s\nOutput:\n{body}"
        return ToolResult(
            output=text,
            ok=result.exit_code == 0,
            meta={"exit_code": result.exit_code, "timed_out": result.timed_out, "signal": result.signal},
        )


def _resolve_workdir(cwd: Path, workdir: str | None) -> Path:
    if not workdir:
        return cwd
    path = Path(workdir).expanduser()
    if not path.is_absolute():
        path = cwd / path
    if not path.is_dir():
        raise ToolError(f"workdir {str(path)!r} is not an existing directory")
    return path
