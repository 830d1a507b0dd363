"""Messages and reasoning, and the item plumbing, for ``ThreadTranslator`` (sans-IO).

A user message is ``input.delivered`` followed by its ``item.completed`` (the item's id is
the input id); an agent message or a reasoning summary starts with its first delta
(``turn.delta``, ``turn.reasoning_delta``) and completes with its ``item.completed`` (or
starts and completes there when nothing streamed). ``_started``/``_completed`` make the
``item/started``/``item/completed`` notifications every kind of item uses, and keep the
finished items with their turn (``_keep``).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping

from echsd.appserver import items
from echsd.appserver.outs import Notify, Out
from echsd.appserver.turns import Entry, TurnView
from echsd.events import InputDelivered, ItemCompleted, TurnDelta, TurnReasoningDelta

# Streamed item kinds: how to build the item, the delta notification, its extra params.
_STREAMED: dict[str, tuple[Callable[[str, Any], dict[str, Any]], str, dict[str, Any]]] = {
    "agentMessage": (items.agent_message, "item/agentMessage/delta", {}),
    "reasoning": (items.reasoning, "item/reasoning/summaryTextDelta", {"summaryIndex": 0}),
}


@dataclass
class _Streaming:
    """An agent message or reasoning item whose deltas are arriving."""

    item_id: str
    started_ms: int


class ItemEvents:
    """The item handlers of ``ThreadTranslator`` (a mixin: it shares its state)."""

    if TYPE_CHECKING:  # provided by ThreadTranslator
        uuid: str
        keep_turns: bool
        client_ids: Mapping[str, str]
        turn: TurnView | None

    def items_init(self) -> None:
        self.first_user_text: str | None = None
        self._delivered: deque[str] = deque()  # input ids whose user message comes next
        self._streaming: dict[str, _Streaming] = {}  # agentMessage / reasoning items being streamed

    def _input_delivered(self, event: InputDelivered, ms: int, seq: int) -> list[Out]:
        self._delivered.append(str(event.input_id))
        return []

    def _item_completed(self, event: ItemCompleted, ms: int, seq: int) -> list[Out]:
        item = event.item
        if not isinstance(item, dict) or self.turn is None:
            return []
        if items.is_user_message(item):
            input_id = self._delivered.popleft() if self._delivered else f"item-{seq}"
            user = items.user_message(input_id, item, self.client_ids.get(input_id))
            if self.first_user_text is None:
                self.first_user_text = next((part["text"] for part in user["content"] if part["type"] == "text"), None)
            return [self._started(user, ms), self._completed(user, ms, ms)]
        if items.is_assistant_message(item):
            return self._finish_streamed("agentMessage", items.message_text(item), ms, seq)
        if item.get("type") == "reasoning":
            return self._finish_streamed("reasoning", items.reasoning_summary(item), ms, seq)
        return []

    def _finish_streamed(self, kind: str, content: Any, ms: int, seq: int) -> list[Out]:
        """The finished agent message or reasoning item (started here if nothing streamed)."""
        build = _STREAMED[kind][0]
        out: list[Out] = []
        streaming = self._streaming.pop(kind, None)
        if streaming is None:
            streaming = _Streaming(f"item-{seq}", ms)
            out.append(self._started(build(streaming.item_id, [] if kind == "reasoning" else ""), ms))
        out.append(self._completed(build(streaming.item_id, content), streaming.started_ms, ms))
        return out

    def _delta(self, kind: str, event: TurnDelta | TurnReasoningDelta, ms: int, seq: int) -> list[Out]:
        """A streamed piece of an agent message or reasoning summary (``kind``)."""
        if self.turn is None:
            return []
        build, method, extra = _STREAMED[kind]
        item_id = str(event.item_id or f"item-{seq}")
        out: list[Out] = []
        streaming = self._streaming.get(kind)
        if streaming is None or streaming.item_id != item_id:
            self._streaming[kind] = _Streaming(item_id, ms)
            out.append(self._started(build(item_id, [] if kind == "reasoning" else ""), ms))
        out.append(Notify(method, {**self._ids(), "itemId": item_id, "delta": str(event.delta or ""), **extra}))
        return out

    def _started(self, item: dict[str, Any], ms: int, turn: TurnView | None = None) -> Notify:
        return Notify("item/started", {"item": item, **self._ids(turn), "startedAtMs": ms})

    def _completed(self, item: dict[str, Any], started_ms: int, ms: int, turn: TurnView | None = None) -> Notify:
        self._keep(item, started_ms, ms, turn)
        return Notify("item/completed", {"item": item, **self._ids(turn), "completedAtMs": ms})

    def _keep(self, item: dict[str, Any], started_ms: int, ms: int, turn: TurnView | None = None) -> Entry | None:
        """Add a finished item to its turn (the running one unless given): every item when
        the history is kept, else only the last agent message (a turn's summary)."""
        turn = turn or self.turn
        if turn is None or not (self.keep_turns or item["type"] == "agentMessage"):
            return None
        entry = Entry(item, started_ms, ms)
        if self.keep_turns:
            turn.entries.append(entry)
        else:
            turn.entries[:] = [entry]
        return entry

    def _ids(self, turn: TurnView | None = None) -> dict[str, str]:
        turn = turn or self.turn
        return {"threadId": self.uuid, "turnId": turn.id if turn is not None else ""}
