"""What one connection has yet to send, bounded in bytes (sans-IO).

A client too slow to read must never slow a thread or grow the daemon without bound.
Streaming deltas are redundant (each item's ``item/completed`` carries its full text or
output), so past ``soft_bytes`` they are dropped, and the client loses only the live
typing effect. Anything else that does not fit in ``hard_bytes`` marks the box as
overflowed: the connection is closed, and the client may reconnect and resume.
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
        self.bytes = 0
        self.dropped = 0  # deltas left out under pressure
        self.overflowed = False
        self._frames: deque[str] = deque()

    def __bool__(self) -> bool:
        return bool(self._frames)

    def push(self, frame: str, *, droppable: bool = False) -> None:
        size = len(frame)
        if droppable and self.bytes + size > self.soft_bytes:
            self.dropped += 1
            return
        if self.bytes + size > self.hard_bytes:
            self.overflowed = True
            return
        self._frames.append(frame)
        self.bytes += size

    def take(self) -> list[str]:
        frames = list(self._frames)
        self._frames.clear()
        self.bytes = 0
        return frames
