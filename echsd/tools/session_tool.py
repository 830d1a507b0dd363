"""``SessionTool``: the base of the tools that work on their thread's exec sessions
(``exec_command``, ``write_stdin``)."""

from __future__ import annotations

from echsd.tools.base import ToolContext, ToolError
from echsd.tools.sessions import Emit, ExecSessionManager


class SessionTool:
    """Base of the tools that work on their thread's exec sessions: the thread's manager
    comes with the call (``ctx.caps.sessions``), or is given to the constructor."""

    def __init__(self, sessions: ExecSessionManager | None = None) -> None:
        self.sessions = sessions

    def sessions_of(self, ctx: ToolContext) -> ExecSessionManager:
        manager = self.sessions or ctx.caps.sessions
        if manager is None:
            raise ToolError("this thread has no exec sessions (the daemon gave it none)")
        return manager

    @staticmethod
    def emitter(ctx: ToolContext) -> Emit:
        return lambda text: ctx.emit_output("stdout", text)
