"""Tree decisions of the thread core: which children a thread takes, and holding still for deletion.

Part of ``ThreadCore`` (a mixin, like ``control.py``). The supervisor is the authority over
the tree; these are the checks and changes that belong to one thread's own state, made with
no checkpoint between the check and the change.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from echsd.errors import InvalidState
from echsd.threads.state import ThreadState

if TYPE_CHECKING:
    from echsd.threads.effects import TurnState


class TreeDecisions:
    __slots__ = ()

    if TYPE_CHECKING:  # provided by ThreadCore
        thread_id: str
        state: ThreadState
        turn: TurnState | None
        stopping: bool
        retired: bool
        children: list[str]
        workspace_busy: str | None

        @property
        def compaction(self) -> int | None: ...

    def check_accepts_children(self) -> None:
        """Refuse new children once the thread is killed or being killed (or stopping)."""
        if self.state is ThreadState.KILLED or (self.turn is not None and self.turn.end_reason == "kill"):
            raise InvalidState(f"thread {self.thread_id} is killed or being killed: it takes no new children")
        if self.stopping:
            raise InvalidState("the daemon is shutting down: no new threads")
        if self.retired:
            raise InvalidState(f"thread {self.thread_id} is being deleted: it takes no new children")

    def add_child(self, child_id: str) -> None:
        self.check_accepts_children()
        self.children.append(child_id)

    def forget_child(self, child_id: str) -> None:
        """A child was deleted (``thread.delete``)."""
        if child_id in self.children:
            self.children.remove(child_id)

    def retire(self, retired: bool = True) -> None:
        """Hold still for deletion (``thread.delete``): only a thread with nothing running,
        and from then on it takes nothing at all (``retired=False``: the deletion failed)."""
        if retired and (self.state is ThreadState.RUNNING or self.turn is not None or self.compaction is not None):
            raise InvalidState(f"thread {self.thread_id} is running: interrupt (or kill) it before deleting it")
        if retired and self.workspace_busy is not None:
            raise InvalidState(f"thread {self.thread_id} is busy with {self.workspace_busy}: delete it when that has ended")
        self.retired = retired
