"""History decisions of the thread core: recovery after a restart or a crash, and compaction.

Part of ``ThreadCore`` (a mixin, like ``control.py``): loading closes whatever a crash left
open (the turn as interrupted or errored, its dangling calls repaired, an autonomous run
ended); a compaction reserves the history while the model summarises it, and its result
replaces the old items unless it was cancelled meanwhile.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from echsd.events import ExecSessionEnded, RunFinished, StateChanged, TurnError, TurnInterrupted
from echsd.errors import Conflict, InvalidState
from echsd.store import InputRow, ops
from echsd.threads.compaction import AUTO_KEEP_USER_TURNS
from echsd.threads.context import is_context_message
from echsd.threads.oversize import fit_items
from echsd.threads.effects import Effects, TurnEnd
from echsd.threads.state import ThreadState, Trigger, transition

if TYPE_CHECKING:
    from echsd.store import ThreadRow
    from echsd.threads.conversation import Conversation
    from echsd.threads.effects import TurnState
    from echsd.threads.inputqueue import InputQueue


class HistoryDecisions:
    __slots__ = ()

    if TYPE_CHECKING:  # provided by ThreadCore
        thread_id: str
        state: ThreadState
        turn: TurnState | None
        active_turn: str | None
        extra: dict[str, Any]
        conversation: Conversation
        inputs: InputQueue

        @property
        def history(self) -> list[dict[str, Any]] | None: ...

        def check_alive(self) -> None: ...

        def to_row(self) -> ThreadRow: ...

        def _running_turn(self) -> TurnState: ...

    # ---- loading -------------------------------------------------------------------------

    def recover(
        self, items: list[dict[str, Any]], inputs: Sequence[InputRow], crashed: str | None = None, turn_ids: Sequence[str | None] | None = None
    ) -> Effects:
        """Take the stored history and waiting inputs; close a turn (and end exec sessions) a
        crash or a restart left open.

        ``inputs`` are the rows still ``queued`` or ``steering`` (see ``InputQueue.load``).
        ``crashed`` describes a worker crash (else the daemon restarted). ``turn_ids``: the
        turn of each item, as stored.
        """
        fx = Effects()
        self.conversation.load(items, turn_ids)
        self.inputs.load(fx, inputs)
        turn_id, self.active_turn = self.active_turn, None
        previous = self.state
        if self.state is ThreadState.RUNNING:
            self.state = transition(self.state, Trigger.RECOVER)
        if turn_id is not None:
            self.conversation.repair(fx, "crash" if crashed is not None else "restart", turn_id)
            if crashed is not None:
                error = {"code": "internal", "message": f"the thread worker crashed: {crashed}"}
                end = TurnEnd(turn_id, "error", None, error, "", self.state.value)
                fx.emit(TurnError, {"turn_id": turn_id, "error": end.error})
            else:
                end = TurnEnd(turn_id, "interrupted", "restart", None, "", self.state.value)
                fx.emit(TurnInterrupted, {"turn_id": turn_id, "reason": end.reason})
            fx.emit(StateChanged, {"state": self.state.value})
            run = self.extra.pop("autorun", None)
            if run is not None:  # its turn died with the daemon or the worker
                fx.emit(RunFinished, {"input_id": run["input_id"], "turns": run["turns"], "reason": "restart"})
            # Closed like any other turn: a parent waiting on this thread reads how it ended.
            self.extra["last_turn"] = {"turn_id": turn_id, "status": end.status, "reason": end.reason, "final_text": ""}
            fx.turn_end = end
        sessions = self.extra.pop("sessions", None)  # exec sessions die with the worker that ran them
        for session_id in sessions or ():
            why = "the thread's worker crashed" if crashed is not None else "the daemon restarted"
            fx.emit(ExecSessionEnded, {"session_id": int(session_id), "reason": why, "exit_code": None})
        if turn_id is not None or self.state is not previous or sessions:
            fx.statements.append(ops.upsert_thread(self.to_row()))
        return fx

    # ---- compaction ----------------------------------------------------------------------

    def begin_compaction(self) -> tuple[int, list[dict[str, Any]]]:
        """Reserve the history for a compaction; returns its token and the items to send.

        While it runs, input queues (no turn may change the history under it); interrupt,
        pause, kill and shutdown cancel it, and its late result is then refused.
        """
        self.check_alive()
        if self.turn is not None:
            raise Conflict("a turn is running; compact between turns (interrupt or wait)")
        if not self.history:
            raise InvalidState("nothing to compact: the history is empty")
        planned = self.conversation.begin_compaction(keep_user_turns=0)  # a manual compaction takes it all
        assert planned is not None
        return planned

    def begin_turn_compaction(self) -> tuple[int, list[dict[str, Any]]] | None:
        """The running turn compacts before a request that would overfill the context: all
        but the last user turn; None when nothing older than it is left to compact."""
        self._running_turn()
        return self.conversation.begin_compaction(keep_user_turns=AUTO_KEEP_USER_TURNS)

    def context_tokens(self) -> int:
        return self.conversation.context_tokens()

    def finish_compaction(self, token: int, replacement: Sequence[dict[str, Any]], reason: str = "manual") -> Effects | None:
        """The compacted history replaces the old one; None if the compaction was cancelled.
        If it summarised the project instructions and environment away, the next turn sends
        them again. The turns it folded away are counted (``compacted_turns``), so turn
        numbers stay."""
        done = self.conversation.finish_compaction(token, replacement, reason)
        if done is None:
            return None
        fx, folded = done
        changed = bool(folded)
        if folded:
            self.extra["compacted_turns"] = int(self.extra.get("compacted_turns") or 0) + folded
        changed = self.forget_lost_context() or changed
        if changed:
            fx.statements.append(ops.upsert_thread(self.to_row()))
        return fx

    def forget_lost_context(self) -> bool:
        """Whether the history lost the project instructions and environment the model was
        told (a compaction summarised them away, an undo took their turn back): then the next
        turn sends them again."""
        if "context" in self.extra and not any(is_context_message(item) for item in self.history or ()):
            del self.extra["context"]
            return True
        return False

    def abort_compaction(self, token: int) -> None:
        self.conversation.abort_compaction(token)

    def fit_history(self, target: int) -> Effects | None:
        """Cut the history's largest texts in the middle until it is about ``target`` tokens
        (a history past its model's window: ``oversize.py``); None when it fits already."""
        if self.compaction is not None or not self.history:
            return None
        fitted = fit_items(self.history, target)
        if fitted is None:
            return None
        items, cut = fitted
        fx = Effects()
        self.conversation.rewrite(fx, items, f"{cut} item(s) cut in the middle to fit the model's context window")
        return fx
