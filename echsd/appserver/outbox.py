"""What one connection has yet to send, bounded in bytes (sans-IO).

A client too slow to read must never slow a thread or grow the daemon without bound.

- Notifications: streaming deltas are redundant (each item's ``item/completed`` carries its
  full text or output), so past ``soft_bytes`` they are dropped, and the client loses only
  the live typing effect. Any other notification that does not fit in ``hard_bytes`` marks
  the box as overflowed: the connection is closed, and the client may reconnect and resume.
- Answers (responses to the client's requests, and our approval requests) are never
  dropped. They are counted in ``answer_bytes`` until the writer has *sent* them
  (``sent``), not only taken them, and the connection takes no further request while they
  are over its budget (``Intake``): so a client that asks without reading holds a bounded
  amount of answers, whatever it asks for.
"""

from __future__ import annotations

from collections import deque

DROPPABLE = frozenset(
    {
        "item/agentMessage/delta",
        "item/commandExecution/outputDelta",
        "item/reasoning/summaryTextDelta",
    }
)
SOFT_BYTES = 8 * 1024 * 1024
HARD_BYTES = 64 * 1024 * 1024


class Outbox:
    def __init__(self, soft_bytes: int = SOFT_BYTES, hard_bytes: int = HARD_BYTES) -> None:
        self.soft_bytes = soft_bytes
        self.hard_bytes = hard_bytes
        self.bytes = 0  # notifications queued
        self.answer_bytes = 0  # answers queued, or taken and not yet sent
        self.dropped = 0  # deltas left out under pressure
        self.overflowed = False
        self._frames: deque[str] = deque()
        self._queued_answers = 0  # of answer_bytes, those still queued
        self._taken_answers = 0  # handed out by the last take, until sent()

    def __bool__(self) -> bool:
        return bool(self._frames)

    def push(self, frame: str, *, droppable: bool = False) -> None:
        """A notification: dropped (droppable) or overflowing when over budget."""
        size = len(frame)
        if droppable and self.bytes + size > self.soft_bytes:
            self.dropped += 1
            return
        if self.bytes + size > self.hard_bytes:
            self.overflowed = True
            return
        self._frames.append(frame)
        self.bytes += size

    def push_answer(self, frame: str) -> None:
        """An answer: always queued (the connection's intake bounds them)."""
        self._frames.append(frame)
        self.answer_bytes += len(frame)
        self._queued_answers += len(frame)

    def take(self) -> list[str]:
        frames = list(self._frames)
        self._frames.clear()
        self.bytes = 0
        self._taken_answers += self._queued_answers
        self._queued_answers = 0
        return frames

    def sent(self) -> None:
        """The writer has sent every frame of its last ``take``."""
        self.answer_bytes -= self._taken_answers
        self._taken_answers = 0
