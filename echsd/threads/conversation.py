"""A thread's Responses history, as the thread core keeps it (sans-IO).

Part of the core: only ``ThreadCore`` calls it. Every change goes into the ``Effects`` it is
given: appended items with their ``item.completed`` events and rows, a compacted history
with ``thread.compacted``. A compaction reserves the history with a token; cancelling it
makes its late result count for nothing, so an interrupted compaction changes nothing.
"""

from __future__ import annotations

from typing import Any, Sequence

from echsd.events import HistoryPruned, ItemCompleted, ThreadCompacted
from echsd.errors import Conflict, InvalidState
from echsd.store import ops
from echsd.threads.compaction import estimate_tokens, tail_start
from echsd.threads.effects import Effects
from echsd.threads.history import last_assistant_text, repair

REPAIR_REASONS = {
    "interrupt": "the turn was interrupted before this call finished",
    "pause": "the thread was paused before this call finished",
    "kill": "the thread was killed before this call finished",
    "shutdown": "the daemon shut down before this call finished",
    "restart": "the daemon restarted before this call finished",
    "crash": "the thread worker crashed before this call finished",
    "error": "the turn ended in an error before this call finished",
}


class Conversation:
    __slots__ = ("thread_id", "items", "turn_ids", "turns", "_seen", "compaction", "_compactions", "_tail", "measured", "anchor")

    def __init__(self, thread_id: str) -> None:
        self.thread_id = thread_id
        self.items: list[dict[str, Any]] | None = None  # None until the thread is loaded
        self.turn_ids: list[str | None] = []  # the turn each item belongs to (parallel to items)
        self.turns: list[str] = []  # the turns the history holds, in order (undo and fork cut by them)
        self._seen: set[str] = set()
        self.compaction: int | None = None  # the token of the compaction in progress
        self._compactions = 0
        self._tail = 0  # where the tail the compaction keeps begins
        self.measured: tuple[int, int] | None = None  # (tokens the endpoint reported, history length then)
        self.anchor: tuple[str, int] | None = None  # (a stored response's id, history length after it): chaining

    def load(self, items: Sequence[dict[str, Any]], turn_ids: Sequence[str | None] | None = None) -> None:
        self.items = list(items)
        self._set_turns(list(turn_ids) if turn_ids is not None else [None] * len(self.items))

    def _set_turns(self, turn_ids: list[str | None]) -> None:
        self.turn_ids = turn_ids
        self.turns, self._seen = [], set()
        for turn_id in turn_ids:
            self._note_turn(turn_id)

    def _note_turn(self, turn_id: str | None) -> None:
        if turn_id is not None and turn_id not in self._seen:
            self._seen.add(turn_id)
            self.turns.append(turn_id)

    def start_of(self, turn_id: str) -> int:
        """Where ``turn_id``'s items begin: cutting the history there leaves the turns before it."""
        return self.turn_ids.index(turn_id)

    def cut(self, fx: Effects, turn_id: str, reason: str) -> int:
        """Leave out ``turn_id`` and every later turn; returns how many items went."""
        return self.prune(fx, self._loaded()[: self.start_of(turn_id)], reason)

    def append(self, fx: Effects, items: Sequence[dict[str, Any]], turn_id: str | None) -> str:
        """The one way into history: items, their ``item.completed`` events, their rows.

        Returns the text of the last assistant message among ``items`` ("" if none).
        """
        if not items:
            return ""
        history = self._loaded()
        start = len(history)
        history.extend(items)
        self.turn_ids.extend([turn_id] * len(items))
        self._note_turn(turn_id)
        for item in items:
            fx.emit(ItemCompleted, {"turn_id": turn_id, "item": item})
        fx.statements.append(ops.append_items(self.thread_id, start, list(items), turn_id))
        return last_assistant_text(items)

    def repair(self, fx: Effects, reason: str, turn_id: str) -> None:
        """Give every dangling call an output saying why it has no real result."""
        self.append(fx, repair(self._loaded(), REPAIR_REASONS.get(reason, reason)), turn_id)

    def prune(self, fx: Effects, keep: Sequence[dict[str, Any]], reason: str) -> int:
        """Replace the history by ``keep`` (a subset of it); ``history.pruned`` says why."""
        removed = len(self._loaded()) - len(keep)
        if removed <= 0:
            return 0
        self.rewrite(fx, keep, reason, _kept_turns(self._loaded(), self.turn_ids, keep))
        return removed

    def rewrite(self, fx: Effects, items: Sequence[dict[str, Any]], reason: str, turn_ids: Sequence[str | None] | None = None) -> None:
        """Replace the history by ``items`` (fewer, or cut down); ``history.pruned`` says why.
        ``turn_ids`` are the items' turns (default: those of the history, item for item: the
        same items cut down)."""
        history = self._loaded()
        self.items = list(items)
        self._set_turns(list(turn_ids) if turn_ids is not None else list(self.turn_ids))
        self.compaction = None  # a compaction planned on the old history counts for nothing
        self.measured = self.anchor = None
        fx.emit(HistoryPruned, {"items_before": len(history), "items_after": len(self.items), "reason": reason})
        fx.statements.append(ops.replace_items(self.thread_id, list(self.items), list(self.turn_ids)))

    def measure(self, tokens: int) -> None:
        """The endpoint reported how many tokens the context now holds."""
        self.measured = (tokens, len(self._loaded()))

    def context_tokens(self) -> int:
        """How full the context is: the last measure, plus an estimate of what came since."""
        history = self._loaded()
        if self.measured is None or self.measured[1] > len(history):
            return estimate_tokens(history)
        tokens, at = self.measured
        return tokens + estimate_tokens(history[at:])

    def begin_compaction(self, keep_user_turns: int) -> tuple[int, list[dict[str, Any]]] | None:
        """Reserve the history for a compaction of its head (all but the last
        ``keep_user_turns`` user turns); None when there is no head to compact."""
        if self.compaction is not None:
            raise Conflict("a compaction is already running")
        history = self._loaded()
        tail = tail_start(history, keep_user_turns)
        if tail == 0:
            return None
        self._compactions += 1
        self.compaction, self._tail = self._compactions, tail
        return self.compaction, list(history[:tail])

    def finish_compaction(self, token: int, replacement: Sequence[dict[str, Any]], reason: str) -> tuple[Effects, int] | None:
        """The summary replaces the head; also returns how many turns it folded away
        entirely (their items are gone: turn numbers count them, undo and fork cannot)."""
        if self.compaction != token:
            return None
        self.compaction = None
        self.measured = self.anchor = None
        history = self._loaded()
        before = len(history)
        self.items = [*replacement, *history[self._tail :]]
        kept_turns = self.turn_ids[self._tail :]
        folded = len({t for t in self.turn_ids[: self._tail] if t is not None} - set(kept_turns))
        self._set_turns([None] * len(replacement) + kept_turns)
        fx = Effects()
        fx.emit(ThreadCompacted, {"items_before": before, "items_after": len(self.items), "reason": reason, **({"turns_folded": folded} if folded else {})})
        fx.statements.append(ops.replace_items(self.thread_id, list(self.items), list(self.turn_ids)))
        return fx, folded

    def cancel_compaction(self) -> bool:
        cancelled, self.compaction = self.compaction is not None, None
        return cancelled

    def abort_compaction(self, token: int) -> None:
        if self.compaction == token:
            self.compaction = None

    def _loaded(self) -> list[dict[str, Any]]:
        if self.items is None:
            raise InvalidState(f"thread {self.thread_id} is not loaded")
        return self.items


def _kept_turns(history: Sequence[dict[str, Any]], turn_ids: Sequence[str | None], kept: Sequence[dict[str, Any]]) -> list[str | None]:
    """The turns of ``kept``, an ordered subset of ``history`` (the same objects)."""
    turns: list[str | None] = []
    position = 0
    for item in kept:
        while position < len(history) and history[position] is not item:
            position += 1
        turns.append(turn_ids[position] if position < len(history) else None)
        position += 1
    return turns
