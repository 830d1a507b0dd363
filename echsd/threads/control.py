"""Control decisions of the thread core: interrupt, pause, resume, kill, shutdown.

Part of ``ThreadCore`` (a mixin, so the one object that owns a thread's state keeps every
transition; this file holds the ones clients trigger). A running turn is never stopped
here: it is *marked* (``end_reason``) and its cancellation requested, and the answer is
parked until ``finish_turn`` has closed it. Otherwise the decision is immediate.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from echsd.events import StateChanged, ThreadKilled
from echsd.store import ops
from echsd.threads.effects import Effects, Park
from echsd.threads.state import ThreadState, Trigger, transition

if TYPE_CHECKING:
    from echsd.store import ThreadRow
    from echsd.threads.conversation import Conversation
    from echsd.threads.effects import TurnState
    from echsd.threads.inputqueue import InputQueue

# When several requests end the same turn, the strongest reason decides where it lands.
END_PRIORITY = {"interrupt": 0, "shutdown": 1, "pause": 2, "kill": 3}


class ControlDecisions:
    __slots__ = ()

    if TYPE_CHECKING:  # provided by ThreadCore
        thread_id: str
        state: ThreadState
        turn: TurnState | None
        stopping: bool
        children: list[str]
        conversation: Conversation
        inputs: InputQueue
        _kill_reason: str

        def check_alive(self) -> None: ...

        def to_row(self) -> ThreadRow: ...

        def next_turn(self) -> Effects | None: ...

        def _running_turn(self) -> TurnState: ...

    def interrupt(self, clear_queue: bool = False) -> tuple[dict[str, Any] | Park, Effects]:
        self.check_alive()
        fx = Effects()
        cleared = self.inputs.drop_queue(fx, "queue cleared by interrupt") if clear_queue else 0
        if self.turn is not None:
            self._end_turn("interrupt", fx)
            return Park(self.turn.turn_id, "interrupt", {"cleared": cleared}), fx
        result: dict[str, Any] = {"thread_id": self.thread_id, "interrupted": False, "cleared": cleared}
        if self._cancel_compaction(fx):
            result.update(interrupted=True, cancelled="compaction")
        result["state"] = self.state.value
        return result, fx

    def pause(self) -> tuple[dict[str, Any] | Park, Effects]:
        self.check_alive()
        fx = Effects()
        if self.turn is not None:
            self._end_turn("pause", fx)
            return Park(self.turn.turn_id, "pause"), fx
        cancelled = self._cancel_compaction(fx)
        self._apply(fx, Trigger.PAUSE)
        result = {"thread_id": self.thread_id, "interrupted": cancelled, "paused": True, "state": self.state.value}
        return result, fx

    def resume(self) -> tuple[dict[str, Any], Effects]:
        self.check_alive()
        fx = Effects()
        resumed = self._apply(fx, Trigger.RESUME)
        if resumed:
            started = self.next_turn()
            if started is not None:
                fx.merge(started)
        return {"thread_id": self.thread_id, "resumed": resumed, "state": self.state.value}, fx

    def kill(self, reason: str = "killed") -> tuple[dict[str, Any] | Park, Effects]:
        """Stop the thread for good; from now on it takes no input and no new children, so
        the answer's ``children`` are final (a tree kill goes on with them)."""
        self.check_alive()
        fx = Effects()
        self._kill_reason = reason
        children = list(self.children)
        if self.turn is not None:
            self._end_turn("kill", fx)
            return Park(self.turn.turn_id, "kill", {"children": children}), fx
        cancelled = self._cancel_compaction(fx)
        self._become_killed(fx, Trigger.KILL)
        fx.statements.append(ops.upsert_thread(self.to_row()))
        return {"thread_id": self.thread_id, "interrupted": cancelled, "killed": True, "state": self.state.value, "children": children}, fx

    def shutdown(self) -> tuple[dict[str, Any] | Park, Effects]:
        """The daemon stops: end the running turn (reason ``shutdown``), start nothing new."""
        self.stopping = True
        fx = Effects()
        if self.turn is not None:
            self._end_turn("shutdown", fx)
            return Park(self.turn.turn_id, "shutdown"), fx
        cancelled = self._cancel_compaction(fx)
        return {"thread_id": self.thread_id, "interrupted": cancelled}, fx

    def _end_turn(self, reason: str, fx: Effects) -> None:
        turn = self._running_turn()
        if turn.end_reason is None or END_PRIORITY[reason] > END_PRIORITY[turn.end_reason]:
            turn.end_reason = reason
        turn.accepting_steer = False
        fx.cancel_turn = True

    def _cancel_compaction(self, fx: Effects) -> bool:
        cancelled = self.conversation.cancel_compaction()
        fx.cancel_compaction = fx.cancel_compaction or cancelled
        return cancelled

    def _apply(self, fx: Effects, trigger: Trigger) -> bool:
        """Move by ``trigger``; a real change is announced and stored. True if it changed."""
        previous = self.state
        self.state = transition(previous, trigger)
        if self.state is previous:
            return False
        fx.emit(StateChanged, {"state": self.state.value})
        fx.statements.append(ops.upsert_thread(self.to_row()))
        return True

    def _become_killed(self, fx: Effects, trigger: Trigger) -> None:
        self.state = transition(self.state, trigger)
        reason = self._kill_reason
        self.inputs.drop_all(fx, reason)
        fx.emit(ThreadKilled, {"reason": reason})
        fx.emit(StateChanged, {"state": self.state.value})
