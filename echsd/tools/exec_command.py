"""``exec_command``: run a shell command, contained, as Codex's unified exec tool does.

The command runs in the thread's cwd (or ``workdir``) through ``shell -c`` (``-lc`` with
``login``), in its own enclosure (see ``containment.py``), with a pty when ``tty`` is true
and pipes otherwise. The call returns when the command exits or after ``yield_time_ms``
(default 10 s, 250 ms to 30 s): with the wall time, the output so far (clipped to
``max_output_tokens``) and either the exit code or the ``session_id`` of the command still
running, for ``write_stdin``. Output streams to clients as ``tool.output`` events while the
call waits. Arguments and report follow Codex's shapes exactly. The command is confined by the
thread's sandbox (``ToolContext.sandbox``); ``sandbox_permissions: "require_escalated"`` (with
a ``justification``) asks a person to let this one command run outside it, which the tool
runner does before the call gets here (``prefix_rule`` names what a person may approve for
the rest of the thread). ``login`` defaults to true, as in Codex: the user's profile (PATH
entries a systemd service would not have) applies; ``login: false`` skips it.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from echsd.tools import exec_args
from echsd.tools.base import ToolContext, ToolError, ToolResult, ToolSpec
from echsd.tools.exec_output import ExecReport
from echsd.tools.process import shell_argv
from echsd.tools.session_tool import SessionTool
from echsd.tools.sessions import ExecRequest

SPEC = ToolSpec(
    name="exec_command",
    description=(
        "Runs a command in a PTY (tty=true) or with plain pipes, returning its output and exit code, or a "
        "session ID for ongoing interaction with write_stdin when it is still running after yield_time_ms."
    ),
    parameters={
        "type": "object",
        "properties": {
            "cmd": {"type": "string", "description": "Shell command to execute."},
            "workdir": {
                "type": "string",
                "description": "Working directory for the command; relative paths start at the thread's cwd, the default.",
            },
            "shell": {"type": "string", "description": "Shell binary to launch. Defaults to bash (or /bin/sh)."},
            "login": {
                "type": "boolean",
                "description": "True (the default) runs the shell with -l (login) semantics, so the user's profile (PATH and the like) applies; false skips the profile.",
            },
            "tty": {
                "type": "boolean",
                "description": "True allocates a PTY for the command (needed to type into it later); false or omitted uses plain pipes.",
            },
            "yield_time_ms": {
                "type": "number",
                "description": "How long to wait for the command before returning its output so far. Defaults to 10000 ms; effective range 250-30000 ms.",
            },
            "max_output_tokens": exec_args.MAX_OUTPUT_TOKENS_PROPERTY,
            "sandbox_permissions": {
                "type": "string",
                "enum": ["use_default", "require_escalated"],
                "description": (
                    "use_default (the default) runs the command in the thread's sandbox; require_escalated asks a person to let "
                    "this one command run outside it. Escalate only for a command that fails, or must fail, because of the sandbox."
                ),
            },
            "justification": {
                "type": "string",
                "description": "With require_escalated: the question the person approving is asked, saying why the command needs it.",
            },
            "prefix_rule": {
                "type": "array",
                "items": {"type": "string"},
                "description": 'With require_escalated: a command prefix the person may approve for the rest of the thread, e.g. ["npm", "install"].',
            },
        },
        "required": ["cmd"],
        "additionalProperties": False,
    },
    writes=True,  # runs (or types into) arbitrary commands
)


class ExecCommand(SessionTool):
    spec = SPEC

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        command = args["cmd"]
        if not command.strip():
            raise ToolError("cmd is empty")
        request = ExecRequest(
            argv=shell_argv(command, shell=_resolve_shell(args.get("shell")), login=args.get("login") is not False),
            cwd=str(resolve_workdir(ctx.cwd, args.get("workdir"))),
            tty=bool(args.get("tty")),
            yield_s=exec_args.exec_yield_s(args, ctx.timeout_s),
            max_tokens=exec_args.max_output_tokens(args),
            command=command,
            sandbox=ctx.sandbox,
        )
        report = await self.sessions_of(ctx).exec_command(request, turn_id=ctx.turn_id, emit=self.emitter(ctx))
        return result_of(report)


def result_of(report: ExecReport) -> ToolResult:
    ok = report.session_id is not None or report.exit_code == 0
    return ToolResult(output=report.render(), ok=ok, meta=report.meta())


def resolve_workdir(cwd: Path, workdir: str | None) -> Path:
    if not workdir:
        return cwd
    path = Path(workdir).expanduser()
    if not path.is_absolute():
        path = cwd / path
    if not path.is_dir():
        raise ToolError(f"workdir {str(path)!r} is not an existing directory")
    return path


def _resolve_shell(shell: str | None) -> str | None:
    if not shell:
        return None
    found = shutil.which(shell)
    if found is None:
        raise ToolError(f"shell {shell!r} was not found or is not executable")
    return found

