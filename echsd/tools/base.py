"""What a tool is: a spec the model sees, and an async ``run`` given parsed arguments.

A tool gets a small ``ToolContext`` (thread, cwd, a way to report progress, and the
thread's capabilities: see ``capabilities.py``) and returns
a ``ToolResult``. It never reaches into a worker's state. Errors a tool raises become the
call's output text (the turn goes on); cancellation (interrupt) propagates untouched.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from echsd.tools.capabilities import OutputSink, ThreadCapabilities
from echsd.tools.errors import ToolError  # noqa: F401 -- tools import it from here
from echsd.tools.sandbox.policy import SandboxPolicy


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]
    parallel_safe: bool = True  # may run concurrently with other calls of the same response
    writes: bool = False  # may change files or run arbitrary commands (policy: writes, approval)
    freeform: dict[str, Any] | None = None  # the custom (freeform) tool form, for models that take it
    strict: bool = False  # the endpoint holds the model's arguments to ``parameters`` exactly (remote tools may ask)

    def to_model(self, custom_tools: bool = False) -> dict[str, Any]:
        """The tool definition sent in the Responses request.

        With ``custom_tools`` (the model accepts freeform tools) a tool that has a freeform
        form is offered that way; its calls then arrive as ``custom_tool_call`` items whose
        raw ``input`` the runner passes as ``{"input": ...}``.
        """
        if custom_tools and self.freeform is not None:
            return dict(self.freeform)
        return {
            "type": "function",
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
            "strict": self.strict,
        }


Content = list[dict[str, Any]]  # Responses input content items: input_text, input_image, ...


@dataclass(frozen=True)
class ToolResult:
    """``output`` is text, or content items (e.g. an ``input_image``) for the model to see."""

    output: str | Content
    ok: bool = True
    meta: dict[str, Any] = field(default_factory=dict)  # e.g. exit_code, shown in tool.completed


@dataclass(frozen=True, slots=True)
class ToolContext:
    thread_id: str
    turn_id: str
    call_id: str
    cwd: Path
    emit_output: OutputSink
    timeout_s: float
    writes: str = "allow"  # the thread's policy for file changes: allow | dry-run | deny
    caps: ThreadCapabilities = field(default_factory=ThreadCapabilities)
    sandbox: SandboxPolicy | None = None  # what confines the thread's commands and file writes (None: nothing)


class Tool(Protocol):
    spec: ToolSpec

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult: ...


