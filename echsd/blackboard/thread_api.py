"""``ThreadBlackboard``: one thread's handle on the blackboard (``BlackboardApi``, the
``blackboard_*`` tools' capability). It writes in the thread's name (``writer`` is its id)
and, asked to, tells the thread's parent what it wrote.

The note to the parent is steered into its running turn (it reaches its next model
request) or, when the parent is idle, starts a turn with it; a paused parent queues it.
It is sent as a ``thread.send`` (``steer``) wherever the parent runs, the same path as any
input, so it is acknowledged and delivered once, never dropped.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable

from echsd.blackboard.board import Blackboard
from echsd.blackboard.entries import entry_object
from echsd.errors import EchsError
from echsd.logs import get_logger

log = get_logger(__name__)


SteerThread = Callable[[str, str], Awaitable[Any]]  # (thread id, text): its acknowledgement


def parent_note(writer: str, key: str, version: int) -> str:
    """The short note a parent gets for ``notify_parent``: it names the key."""
    return f"[blackboard] your sub-agent {writer} wrote {key!r} (version {version}); read it with blackboard_read."


class ThreadBlackboard:
    def __init__(self, board: Blackboard, thread_id: str, parent: str | None, steer: SteerThread) -> None:
        self._board = board
        self.thread_id = thread_id
        self._parent = parent
        self._steer = steer

    async def write(self, key: str, value: Any, *, if_version: int | None = None, notify_parent: bool = False) -> dict[str, Any]:
        entry = await self._board.set(key, value, writer=self.thread_id, if_version=if_version)
        result = entry_object(entry)
        if notify_parent:
            result["parent_notified"] = await self._notify(entry.key, entry.version)
        return result

    async def _notify(self, key: str, version: int) -> bool | str:
        """True once the parent acknowledged the note; otherwise why not (the write stands)."""
        if self._parent is None:
            return "no parent: this thread is not a sub-agent"
        try:
            await self._steer(self._parent, parent_note(self.thread_id, key, version))
        except EchsError as exc:  # e.g. a killed parent (invalid_state)
            log.info("blackboard note not delivered", thread_id=self.thread_id, parent=self._parent, error=exc.message)
            return f"not delivered: {exc.message}"
        return True

    async def read(self, *, key: str | None = None, prefix: str | None = None) -> list[dict[str, Any]]:
        if key is not None:
            entry = self._board.find(key)
            return [] if entry is None else [entry_object(entry)]
        return [entry_object(entry) for entry in self._board.list(prefix or "")]

    async def wait(
        self, *, key: str | None = None, prefix: str | None = None, after_version: int | None = None, timeout_s: float | None = None
    ) -> list[dict[str, Any]]:
        entries = await self._board.wait(key=key, prefix=prefix, after_version=after_version, timeout_s=timeout_s)
        return [entry_object(entry) for entry in entries]
