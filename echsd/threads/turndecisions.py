"""Decisions of the thread core about the running turn: its items, steers, usage, end.

Part of ``ThreadCore`` (a mixin: the one object that owns a thread's state keeps every
transition; this file holds the ones the turn task triggers through ``TurnHost``). Every
item enters the history through ``_append`` (items, their events and rows in one unit), and
``finish_turn`` writes everything that closes a turn as one unit: outputs for dangling calls,
usage, the terminal event, re-queued steers, the thread's new state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from echsd.events import EventData, RunFinished, StateChanged, TurnCompleted, TurnDiff, TurnError, TurnInterrupted, TurnUsage
from echsd.codex import strip_reasoning_items
from echsd.done_marker import split_done
from echsd.store import ops
from echsd.ids import new_input_id
from echsd.threads.autorun import continuation_text, end_reason
from echsd.threads.effects import USAGE_KEYS, Effects, TurnEnd
from echsd.threads.history import interrupted_reply
from echsd.threads.inputs import PendingInput
from echsd.threads.state import Disposition, InputMode, Trigger, transition

if TYPE_CHECKING:
    from echsd.store import ThreadRow
    from echsd.threads.config import ThreadConfig
    from echsd.threads.conversation import Conversation
    from echsd.threads.effects import TurnState
    from echsd.threads.inputqueue import InputQueue
    from echsd.threads.state import ThreadState


class TurnDecisions:
    __slots__ = ()

    if TYPE_CHECKING:  # provided by ThreadCore
        thread_id: str
        state: ThreadState
        config: ThreadConfig
        turn: TurnState | None
        active_turn: str | None
        usage: dict[str, Any]
        extra: dict[str, Any]
        conversation: Conversation
        inputs: InputQueue

        @property
        def history(self) -> list[dict[str, Any]] | None: ...

        def to_row(self) -> ThreadRow: ...

        def _running_turn(self) -> TurnState: ...

        def _deliver(self, fx: Effects, inputs: Sequence[Any], turn_id: str) -> None: ...

        def _append(self, fx: Effects, items: Sequence[dict[str, Any]], turn_id: str | None) -> None: ...

        def _become_killed(self, fx: Effects, trigger: Trigger) -> None: ...

    def append_items(self, items: Sequence[dict[str, Any]], before: Sequence[tuple[type[EventData], dict[str, Any]]] = ()) -> Effects:
        """Items join the history (with ``item.completed`` each), after ``before`` events."""
        fx = Effects(events=[(kind.type_name, data) for kind, data in before])
        self._append(fx, items, self.turn.turn_id if self.turn is not None else None)
        return fx

    def deliver_steers(self) -> Effects | None:
        """Steered inputs join the running turn (at a safe boundary: before a model request)."""
        turn = self._running_turn()
        pending = self.inputs.take_steers()
        if not pending:
            return None
        fx = Effects()
        self._deliver(fx, pending, turn.turn_id)
        return fx

    def settle(self) -> bool:
        """The model stopped calling tools: True if steers wait (the turn goes on), else the
        turn stops taking steers (later ones queue for the next turn)."""
        turn = self._running_turn()
        if self.inputs.steering:
            return True
        turn.accepting_steer = False
        return False

    def add_usage(self, usage: dict[str, int], cost_usd: float | None = None) -> None:
        """One response's tokens, and its estimated cost (None: the model has no prices)."""
        turn = self._running_turn()
        for key in USAGE_KEYS:
            turn.usage[key] += int(usage.get(key, 0))
        turn.usage["cost_usd"] += cost_usd or 0.0
        if usage.get("input_tokens"):  # what the context holds now, as the endpoint counts it
            self.conversation.measure(int(usage["input_tokens"]) + int(usage.get("output_tokens", 0)))

    def note_response(self, response_id: str | None) -> None:
        """A response completed: with ``chain``, the next request continues from it."""
        if self.config.chain and response_id:
            self.conversation.anchor = (response_id, len(self.history or ()))

    def drop_chain(self) -> None:
        """The endpoint no longer has the anchored response: send the whole history again."""
        self.conversation.anchor = None

    def discard_since(self, start: int, reason: str) -> Effects:
        """Forget the items from ``start`` on (a response that broke after output started:
        it is requested again, so its partial output must not be sent)."""
        turn = self._running_turn()
        fx = Effects()
        assert self.history is not None
        self.conversation.prune(fx, self.history[:start], reason)
        if turn.final_text_at >= start:
            turn.final_text, turn.final_text_at = "", -1
        return fx

    def drop_reasoning(self, reason: str, keys: frozenset[str]) -> Effects:
        """Leave out the reasoning items the endpoint refused (``keys``: their ``item_key``s,
        or ``{"*"}`` for all): another model's, or unreadable ones."""
        fx = Effects()
        assert self.history is not None
        kept, _removed = strip_reasoning_items(self.history, keys)
        self.conversation.prune(fx, kept, reason)
        return fx

    def finish_turn(
        self,
        status: str,
        error: dict[str, str] | None = None,
        partial: str = "",
        diff: dict[str, Any] | None = None,
        work: dict[str, Any] | None = None,
    ) -> Effects:
        """Close the running turn: ``status`` is how the loop ended (completed | error);
        a turn ended from outside is ``interrupted`` whatever the loop saw. ``partial`` is
        the reply being streamed when it ended: an interrupted turn keeps it, marked.
        ``diff``: what the turn changed in the cwd (``turn.diff``), if anything; ``work``: a
        worktree thread's branch and diff stat, for whoever waits on it."""
        turn = self._running_turn()
        reason = turn.end_reason
        if reason is not None:
            status, error = "interrupted", None
        fx = Effects()
        if status != "completed":
            self.conversation.repair(fx, reason if reason is not None else "error", turn.turn_id)
        if status == "interrupted" and partial.strip():
            self.conversation.append(fx, [interrupted_reply(partial)], turn.turn_id)
        for key in (*USAGE_KEYS, "cost_usd"):
            self.usage[key] = self.usage.get(key, 0) + turn.usage[key]
        fx.emit(TurnUsage, {"turn_id": turn.turn_id, **turn.usage})
        if diff is not None:
            fx.emit(TurnDiff, {"turn_id": turn.turn_id, "turn": turn.number, **diff})
        final_text, done = split_done(turn.final_text)
        if status == "completed":
            fx.emit(TurnCompleted, {"turn_id": turn.turn_id, "final_text": final_text, **({"done": True} if done else {})})
        elif status == "interrupted":
            fx.emit(TurnInterrupted, {"turn_id": turn.turn_id, "reason": reason})
        else:
            fx.emit(TurnError, {"turn_id": turn.turn_id, "error": error})
        self.turn = None
        self.active_turn = None
        if turn.autorun:
            self._next_in_run(fx, status, reason, done)
        if reason == "kill":
            self._become_killed(fx, Trigger.KILL)
        else:
            self.inputs.requeue_steers(fx)
            self.state = transition(self.state, Trigger.TURN_END_PAUSED if reason == "pause" else Trigger.TURN_END)
            fx.emit(StateChanged, {"state": self.state.value})
        # What a parent waiting on this thread reads (kept with the thread: restarts keep it).
        self.extra["last_turn"] = {"turn_id": turn.turn_id, "status": status, "reason": reason, "final_text": final_text, **(work or {})}
        fx.statements.append(ops.upsert_thread(self.to_row()))
        fx.turn_end = TurnEnd(turn.turn_id, status, reason, error, final_text, self.state.value, work)
        return fx

    def _next_in_run(self, fx: Effects, status: str, reason: str | None, done: bool) -> None:
        """After a run's turn: queue its continuation ahead of everything, or end the run."""
        run = self.extra["autorun"]
        if status == "completed" and reason is None and not done and run["turns"] < run["steps"]:
            pending = PendingInput(new_input_id(), self.thread_id, continuation_text(run), InputMode.QUEUE, Disposition.QUEUED)
            self.inputs.push_front(fx, pending)
            run["awaiting"] = pending.input_id
            return
        del self.extra["autorun"]
        fx.emit(RunFinished, {"input_id": run["input_id"], "turns": run["turns"], "reason": end_reason(status, reason, done)})
