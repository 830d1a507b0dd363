"""What a tool may use besides its arguments: handles owned by the calling thread.

Tools never reach into a worker's state; they get these capabilities through their
``ToolContext``. Each is a small protocol, implemented by the thread runtime (or by the
subsystem that owns the resource) and ``None`` where the daemon offers no such thing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Mapping, Protocol, Sequence

if TYPE_CHECKING:
    from echsd.tools.sessions import ExecSessionManager

OutputSink = Callable[[str, str], Awaitable[None]]  # (stream, chunk) -> emitted as tool.output


class Peer(Protocol):
    """One connected client, addressed alone: messages go to it and to no other client
    (approval prompts, calls of the remote tools it registered)."""

    @property
    def peer_id(self) -> int: ...

    @property
    def closed(self) -> bool: ...

    def send_direct(self, message: dict[str, Any]) -> bool:
        """Queue ``message`` for this client only; False if it is gone."""

    def on_close(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once when the connection closes (at once if it has)."""


class PlanApi(Protocol):
    """The calling thread's task plan (``update_plan``)."""

    async def update(self, explanation: str | None, steps: list[dict[str, str]]) -> None: ...


class AgentsApi(Protocol):
    """The calling thread's sub-agents (spawn_agent, send_to_agent, wait_agents, ...)."""

    async def spawn(self, message: str, options: Mapping[str, Any]) -> dict[str, Any]:
        """``{agent_id}``, with ``branch`` and ``worktree`` for a child in a worktree, ``note``."""

    async def merge(self, agent_id: str) -> dict[str, Any]: ...

    async def send(self, agent_id: str, message: str, mode: str) -> dict[str, Any]: ...

    async def wait(self, agent_ids: Sequence[str], timeout_s: float | None, mode: str) -> dict[str, Any]: ...

    async def kill(self, agent_id: str) -> dict[str, Any]: ...

    async def list(self) -> list[dict[str, Any]]: ...


class BlackboardApi(Protocol):
    """The shared blackboard, written in the calling thread's name."""

    async def write(self, key: str, value: Any, *, if_version: int | None = None, notify_parent: bool = False) -> dict[str, Any]: ...

    async def read(self, *, key: str | None = None, prefix: str | None = None) -> list[dict[str, Any]]: ...

    async def wait(
        self, *, key: str | None = None, prefix: str | None = None, after_version: int | None = None, timeout_s: float | None = None
    ) -> list[dict[str, Any]]: ...


class Approvals(Protocol):
    """Asks a client to approve a call; True when approved (a timeout denies)."""

    async def request(self, tool: str, arguments: Any, summary: str) -> bool: ...


@dataclass(frozen=True, slots=True)
class ThreadCapabilities:
    sessions: ExecSessionManager | None = None  # the thread's exec sessions (it ends them with its turns)
    plan: PlanApi | None = None
    agents: AgentsApi | None = None
    blackboard: BlackboardApi | None = None
    approvals: Approvals | None = None
