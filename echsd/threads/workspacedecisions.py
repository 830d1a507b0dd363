"""Workspace decisions of the thread core: turn numbers, undo, fork, and holding still for git.

Part of ``ThreadCore`` (a mixin, like ``control.py``). Turns are numbered from 1 in the
order the history holds them (``Conversation.turns``), after those a compaction folded away
(``compacted_turns``), so an undo frees its numbers for the next turns. Work on the
thread's files that must not race a turn (undo, merge) holds the thread still
(``begin_workspace``): no turn starts until it ends, input queues meanwhile.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from echsd.errors import BadRequest, Conflict, InvalidState, NotFound
from echsd.events import ThreadUndone
from echsd.store import ops
from echsd.threads.effects import Effects

if TYPE_CHECKING:
    from echsd.store import ThreadRow
    from echsd.threads.config import ThreadConfig
    from echsd.threads.conversation import Conversation
    from echsd.threads.effects import TurnState

UNDONE_KEPT = 1000  # undone turn ids kept on the thread (its log still has their events)


@dataclass(frozen=True, slots=True)
class UndoPlan:
    turn_ids: list[str]  # oldest first
    numbers: list[int]
    cwd: str


class WorkspaceDecisions:
    __slots__ = ()

    if TYPE_CHECKING:  # provided by ThreadCore
        thread_id: str
        turn: TurnState | None
        extra: dict[str, Any]
        config: ThreadConfig
        conversation: Conversation
        workspace_busy: str | None

        @property
        def compaction(self) -> int | None: ...

        def check_alive(self) -> None: ...

        def to_row(self) -> ThreadRow: ...

        def forget_lost_context(self) -> bool: ...

    # ---- turn numbers --------------------------------------------------------------------

    @property
    def compacted_turns(self) -> int:
        return int(self.extra.get("compacted_turns") or 0)

    def turn_number(self, turn_id: str) -> int | None:
        """The number of a turn the history holds (None: not there)."""
        try:
            return self.compacted_turns + self.conversation.turns.index(turn_id) + 1
        except ValueError:
            return None

    def next_turn_number(self) -> int:
        return self.compacted_turns + len(self.conversation.turns) + 1

    def _turn_of(self, number: int) -> str:
        index = number - self.compacted_turns - 1
        if number <= self.compacted_turns:
            raise InvalidState(f"turn {number} of {self.thread_id} was folded into a compaction summary: its history cannot be separated any more")
        if index >= len(self.conversation.turns):
            raise NotFound(f"thread {self.thread_id} has no turn {number} (it has {self.compacted_turns + len(self.conversation.turns)})")
        return self.conversation.turns[index]

    # ---- holding still for git work --------------------------------------------------------

    def begin_workspace(self, what: str) -> None:
        """Hold the thread still for ``what`` (an undo, a merge): refused while a turn or a
        compaction runs; no turn starts until ``end_workspace``."""
        self.check_alive()
        if self.turn is not None:
            raise InvalidState(f"thread {self.thread_id} is running a turn: {what} waits until it has ended (or interrupt it)")
        if self.compaction is not None:
            raise Conflict(f"thread {self.thread_id} is being compacted: {what} waits until that has ended")
        if self.workspace_busy is not None:
            raise Conflict(f"thread {self.thread_id} is busy with {self.workspace_busy}")
        self.workspace_busy = what

    def end_workspace(self) -> None:
        self.workspace_busy = None

    # ---- undo -------------------------------------------------------------------------------

    def plan_undo(self, turns: int | None, turn_id: str | None) -> UndoPlan:
        """Which turns an undo takes back (the last ``turns``, or ``turn_id`` and every later
        one); call after ``begin_workspace``."""
        held = self.conversation.turns
        if turn_id is not None:
            if turn_id not in held:
                raise NotFound(f"thread {self.thread_id} has no turn {turn_id} in its history")
            chosen = held[held.index(turn_id) :]
        else:
            count = turns or 1
            if not held:
                raise InvalidState(f"thread {self.thread_id} has no turn to undo")
            if count > len(held):
                raise BadRequest(f"thread {self.thread_id} has {len(held)} turn(s) to undo, not {count}")
            chosen = held[-count:]
        numbers = [self.compacted_turns + held.index(each) + 1 for each in chosen]
        return UndoPlan(list(chosen), numbers, self.config.cwd)

    def finish_undo(self, plan: UndoPlan, files: dict[str, Any]) -> tuple[dict[str, Any], Effects]:
        """The turns leave the history; ``thread.undone`` records what the undo did."""
        fx = Effects()
        shown = ", ".join(map(str, plan.numbers))
        removed = self.conversation.cut(fx, plan.turn_ids[0], f"turn{'s' if len(plan.numbers) > 1 else ''} {shown} undone")
        data = {"turns": plan.numbers, "turn_ids": plan.turn_ids, **files, "items_removed": removed}
        fx.emit(ThreadUndone, data)
        self.forget_lost_context()
        # Kept with the thread (the latest ones): readers of its log leave these turns out.
        self.extra["undone_turns"] = [*(self.extra.get("undone_turns") or []), *plan.turn_ids][-UNDONE_KEPT:]
        fx.statements.append(ops.upsert_thread(self.to_row()))
        return {"thread_id": self.thread_id, **data}, fx

    # ---- fork --------------------------------------------------------------------------------

    def fork_source(self, at_turn: int | None, turn_id: str | None) -> dict[str, Any]:
        """Config and history up to the end of a finished turn, for ``thread.fork``."""
        self.check_alive()
        held = self.conversation.turns
        running = self.turn.turn_id if self.turn is not None else None
        finished = [each for each in held if each != running]
        if turn_id is not None:
            if turn_id not in held:
                raise NotFound(f"thread {self.thread_id} has no turn {turn_id} in its history")
            chosen: str | None = turn_id
        elif at_turn == 0:
            chosen = None
            if self.compacted_turns:
                raise InvalidState(f"the first turns of {self.thread_id} were folded into a compaction summary: fork at a later turn")
        elif at_turn is not None:
            chosen = self._turn_of(at_turn)
        else:
            chosen = finished[-1] if finished else None
        if chosen is not None and chosen == running:
            raise InvalidState(f"turn {self.turn_number(chosen)} of {self.thread_id} is still running: fork at an earlier turn, or when it has ended")
        items = self.conversation.items or []
        if chosen is None:
            cut = self.conversation.start_of(held[0]) if held else len(items)  # what precedes every turn
        else:
            later = held[held.index(chosen) + 1 :]
            cut = self.conversation.start_of(later[0]) if later else len(items)
        return {
            "config": self.config.to_dict(),
            "items": list(items[:cut]),
            "turn_ids": list(self.conversation.turn_ids[:cut]),
            "turn": self.turn_number(chosen) if chosen is not None else self.compacted_turns,
            "turn_id": chosen,
            "compacted_turns": self.compacted_turns,
            "task": self.extra.get("task"),
            "undone_turns": list(self.extra.get("undone_turns") or ()),
        }

    # ---- what the thread's workspace is --------------------------------------------------------

    @property
    def worktree(self) -> dict[str, Any] | None:
        """``{path, branch, origin, base, repo}`` of the thread's own worktree, or None."""
        found = self.extra.get("worktree")
        return dict(found) if isinstance(found, dict) else None

    def note_snapshot_repo(self, common_dir: str) -> Effects | None:
        """A repository now holds this thread's snapshot refs (pruned with the thread)."""
        repos = self.extra.setdefault("snapshot_repos", [])
        if common_dir in repos:
            return None
        repos.append(common_dir)
        fx = Effects()
        fx.statements.append(ops.upsert_thread(self.to_row()))
        return fx
