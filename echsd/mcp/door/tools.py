"""echsd as MCP tools: what an MCP client (Codex, Claude Code, an editor) may ask the daemon.

Built with the SDK's ``MCPServer``; every tool goes through ``WireBackend`` (the daemon's
wire protocol), so the threads it starts are ordinary echsd threads that outlive the MCP
client. Waits report progress (``notifications/progress``) as the threads work. A refusal
of the daemon (an unknown thread, a killed one, a failed compare-and-set) is the call's
error, with the daemon's code and message.
"""

from __future__ import annotations

from typing import Annotated, Any, Awaitable, Callable, Literal, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import Field

from echsd import __version__
from echsd.mcp.door.backend import WireBackend
from echsd.wire.errors import WireError

T = TypeVar("T")
MAX_WAIT_S = 3600.0
DEFAULT_WAIT_S = 50.0  # under the 60 s many MCP clients give a call by default
INSTRUCTIONS = (
    "echsd runs coding agents in the background, each in a thread of its own that keeps its history and "
    "goes on after you disconnect. Start one with echs_new, give it work with echs_send (wait for its "
    "answer, or not), run several at once and collect their answers with echs_wait. Threads can share "
    "notes through the blackboard."
)

ThreadId = Annotated[str, Field(description="a thread id (thr_ and 16 hex digits)")]
WaitSeconds = Annotated[float, Field(gt=0, le=MAX_WAIT_S, description=f"how long to wait at most, in seconds (default {DEFAULT_WAIT_S:g})")]


async def _answer(request: Awaitable[T]) -> T:
    try:
        return await request
    except WireError as exc:
        raise ToolError(f"{exc.code}: {exc.message}") from None


class _Progress:
    """Progress lines for one call, numbered (a client shows the latest)."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.count = 0

    async def __call__(self, line: str) -> None:
        self.count += 1
        await self.ctx.report_progress(self.count, None, line)


def build_server(backend_of: Callable[[], WireBackend]) -> MCPServer:
    """The MCP server; ``backend_of`` gives the backend of the current connection."""
    server = MCPServer("echsd", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    read_only = ToolAnnotations(read_only_hint=True)

    @server.tool()
    async def echs_new(
        cwd: Annotated[str | None, Field(description="absolute path of the directory the agent works in (default: the daemon's)")] = None,
        model: Annotated[str | None, Field(description="model name (default: the daemon's)")] = None,
        instructions: Annotated[str | None, Field(description="system instructions for the agent")] = None,
        sandbox: Annotated[Literal["read-only", "workspace-write", "full-access"] | None, Field(description="what the agent's commands may change")] = None,
        reasoning: Annotated[Literal["none", "minimal", "low", "medium", "high", "xhigh"] | None, Field(description="reasoning effort")] = None,
    ) -> dict[str, Any]:
        """Start a new agent thread (idle until it is sent work). Returns its thread_id."""
        params = {"cwd": cwd, "model": model, "instructions": instructions, "sandbox": sandbox, "reasoning": reasoning}
        return await _answer(backend_of().create({key: value for key, value in params.items() if value is not None}))

    @server.tool()
    async def echs_send(
        thread_id: ThreadId,
        text: Annotated[str, Field(min_length=1, description="the message for the agent")],
        ctx: Context,
        mode: Annotated[Literal["send", "queue", "steer"], Field(description="send: start a turn, or queue behind the running one; queue: always after the current turn; steer: into the running turn")] = "send",
        wait: Annotated[bool, Field(description="wait for the turn that takes this message to end and return the agent's final answer")] = True,
        timeout_s: WaitSeconds = DEFAULT_WAIT_S,
    ) -> dict[str, Any]:
        """Give a thread work. With wait (the default) returns the turn's status (completed,
        interrupted, error) and the agent's final answer, or status running if it is not done
        within timeout_s (then use echs_wait)."""
        return await _answer(backend_of().send(thread_id, text, mode, wait, timeout_s, _Progress(ctx)))

    @server.tool()
    async def echs_wait(
        thread_ids: Annotated[list[str], Field(min_length=1, max_length=100, description="the threads to wait for")],
        ctx: Context,
        mode: Annotated[Literal["any", "all"], Field(description="return when any of them, or all of them, stopped running")] = "all",
        timeout_s: WaitSeconds = DEFAULT_WAIT_S,
    ) -> dict[str, Any]:
        """Wait until any or all of the threads have stopped running; returns each one's status
        and final answer, and whether the wait timed out."""
        return await _answer(backend_of().wait(thread_ids, mode, timeout_s, _Progress(ctx)))

    @server.tool(annotations=read_only)
    async def echs_status(thread_id: Annotated[str | None, Field(description="a thread id; without one, the daemon's status")] = None) -> dict[str, Any]:
        """A thread's status (running, paused, killed, or how its last turn ended) and final
        answer; without a thread id, the daemon's version, model and thread counts."""
        return await _answer(backend_of().status(thread_id))

    @server.tool(annotations=read_only)
    async def echs_list(
        state: Annotated[Literal["idle", "running", "paused", "killed"] | None, Field(description="only threads in this state")] = None,
        limit: Annotated[int, Field(ge=1, le=1000, description="at most this many, newest first")] = 50,
    ) -> dict[str, Any]:
        """The daemon's threads, newest first, each with its status and final answer."""
        return {"threads": await _answer(backend_of().list(state, limit))}

    @server.tool(annotations=read_only)
    async def echs_show(thread_id: ThreadId) -> dict[str, Any]:
        """Everything about one thread: config, state, parent and children, usage, queue."""
        return await _answer(backend_of().show(thread_id))

    @server.tool()
    async def echs_interrupt(
        thread_id: ThreadId,
        clear_queue: Annotated[bool, Field(description="also drop the messages waiting in its queue")] = False,
    ) -> dict[str, Any]:
        """Stop the thread's running turn (and every command it started); the thread stays usable."""
        return await _answer(backend_of().interrupt(thread_id, clear_queue))

    @server.tool()
    async def echs_kill(thread_id: ThreadId) -> dict[str, Any]:
        """Stop a thread and all its sub-agents for good."""
        return await _answer(backend_of().kill(thread_id))

    @server.tool(annotations=read_only)
    async def blackboard_get(key: Annotated[str, Field(min_length=1, description="the key")]) -> dict[str, Any]:
        """Read an entry of the blackboard all threads and clients share: value, version, writer."""
        return await _answer(backend_of().blackboard_get(key))

    @server.tool()
    async def blackboard_set(
        key: Annotated[str, Field(min_length=1, description="the key")],
        value: Annotated[Any, Field(description="any JSON value")],
        if_version: Annotated[int | None, Field(ge=0, description="write only if the entry is at this version now (0: only if it does not exist)")] = None,
    ) -> dict[str, Any]:
        """Write a JSON value on the shared blackboard; returns the entry with its new version."""
        return await _answer(backend_of().blackboard_set(key, value, if_version))

    return server
