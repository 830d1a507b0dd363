"""The inputs a thread holds: a FIFO queue, and steers waiting for the running turn.

Part of the thread core (sans-IO): only ``ThreadCore`` calls it, and every change is written
into the ``Effects`` it is given (the input's row and its ``input.*`` event), so an input's
fate is stored in the same unit as the decision that sealed it.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Sequence

from echsd.events import InputDropped, InputQueued
from echsd.errors import InvalidState
from echsd.store import InputRow
from echsd.threads.effects import Effects
from echsd.threads.inputs import PendingInput

RECENT_ACKS = 256  # acknowledgements kept in memory per thread (the store has them all)


class InputQueue:
    __slots__ = ("thread_id", "_queue", "steering", "_next_position", "_pending_at_load", "_acks")

    def __init__(self, thread_id: str, pending_at_load: int = 0) -> None:
        self.thread_id = thread_id
        self._queue: deque[PendingInput] | None = None  # None until the thread is loaded
        self.steering: list[PendingInput] = []
        self._next_position = 1
        self._pending_at_load = pending_at_load
        self._acks: dict[str, tuple[dict[str, Any], str]] = {}  # client_msg_id -> (ack, text)

    def __len__(self) -> int:
        """Inputs waiting in the queue (before loading: as counted in the store)."""
        return len(self._queue) if self._queue is not None else self._pending_at_load

    def ids(self) -> list[str]:
        return [pending.input_id for pending in self._loaded()]

    def load(self, fx: Effects, inputs: Sequence[InputRow]) -> None:
        """Take the stored inputs (``queued`` or ``steering``, steers first: position 0).

        A steer that was waiting when the daemon or worker died never reached the model: it
        stays at the head of the queue, now as a queued input.
        """
        pending = [PendingInput.from_row(row) for row in inputs]
        self._queue = deque(pending)
        self._next_position = max((p.position for p in pending), default=0) + 1
        for waiting, row in zip(pending, inputs):
            if row.status == "steering":
                fx.statements.append(waiting.write("queued"))
                fx.emit(InputQueued, {"input_id": waiting.input_id, "position": 1})

    def append(self, fx: Effects, pending: PendingInput) -> None:
        queue = self._loaded()
        pending.position = self._next_position
        self._next_position += 1
        queue.append(pending)
        fx.statements.append(pending.write("queued"))
        fx.emit(InputQueued, {"input_id": pending.input_id, "position": len(queue)})

    def steer(self, fx: Effects, pending: PendingInput) -> None:
        pending.position = 0
        self.steering.append(pending)
        fx.statements.append(pending.write("steering"))

    def push_front(self, fx: Effects, pending: PendingInput) -> None:
        """An input that must run next (an autonomous run's continuation)."""
        queue = self._loaded()
        pending.position = 0
        queue.appendleft(pending)
        fx.statements.append(pending.write("queued"))
        fx.emit(InputQueued, {"input_id": pending.input_id, "position": 1})

    def popleft(self) -> PendingInput | None:
        queue = self._loaded()
        return queue.popleft() if queue else None

    def take_steers(self) -> list[PendingInput]:
        taken, self.steering = self.steering, []
        return taken

    def requeue_steers(self, fx: Effects) -> None:
        """Steers that missed their turn wait at the head of the queue, in their order."""
        queue = self._loaded()
        for waiting in reversed(self.take_steers()):
            waiting.position = 0
            queue.appendleft(waiting)
            fx.statements.append(waiting.write("queued"))
            fx.emit(InputQueued, {"input_id": waiting.input_id, "position": 1})

    def drop_queue(self, fx: Effects, reason: str) -> int:
        queue = self._loaded()
        dropped = list(queue)
        queue.clear()
        _drop(fx, dropped, reason)
        return len(dropped)

    def drop_all(self, fx: Effects, reason: str) -> None:
        _drop(fx, self.take_steers(), reason)
        self.drop_queue(fx, reason)

    def previous_ack(self, client_msg_id: str, text: str) -> dict[str, Any] | None:
        """The first acknowledgement of ``client_msg_id``; a note if ``text`` differs from
        what it acknowledged (the first input stands: it is never delivered twice)."""
        known = self._acks.get(client_msg_id)
        if known is None:
            return None
        ack, first_text = known
        if text != first_text:
            return {**ack, "note": f"client_msg_id {client_msg_id!r} was used before with a different text; the first input stands"}
        return dict(ack)

    def remember_ack(self, client_msg_id: str, ack: dict[str, Any], text: str) -> None:
        self._acks[client_msg_id] = (dict(ack), text)
        if len(self._acks) > RECENT_ACKS:
            del self._acks[next(iter(self._acks))]

    def _loaded(self) -> deque[PendingInput]:
        if self._queue is None:
            raise InvalidState(f"thread {self.thread_id} is not loaded")
        return self._queue


def _drop(fx: Effects, inputs: Sequence[PendingInput], reason: str) -> None:
    for pending in inputs:
        fx.statements.append(pending.write("dropped", reason=reason))
        fx.emit(InputDropped, {"input_id": pending.input_id, "reason": reason})
