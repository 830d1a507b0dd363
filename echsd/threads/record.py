"""What the supervisor knows about every thread, whether or not its actor is running.

Thread metadata is loaded eagerly at start (cheap), histories lazily by the actor. The
record is the read model behind ``thread.get``/``thread.list``; only the thread's actor
(or the supervisor before the actor exists) changes it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import trio

from echsd.store import ThreadRow
from echsd.threads.config import ThreadConfig
from echsd.threads.eventlog import ThreadLog
from echsd.threads.mailbox import Request
from echsd.threads.state import ThreadState

MAILBOX_SIZE = 1024
USAGE_KEYS = ("input_tokens", "cached_tokens", "output_tokens", "reasoning_tokens")


def empty_usage() -> dict[str, int]:
    return {key: 0 for key in USAGE_KEYS} | {"turns": 0}


@dataclass
class ThreadRecord:
    thread_id: str
    parent: str | None
    created_at: float
    state: ThreadState
    config: ThreadConfig
    usage: dict[str, int] = field(default_factory=empty_usage)
    active_turn: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    children: list[str] = field(default_factory=list)
    queued: int = 0
    log: ThreadLog | None = None
    actor_started: bool = False
    failed: str | None = None  # set when the worker kept crashing and was given up
    mailbox_send: trio.MemorySendChannel[Request] = field(init=False, repr=False)
    mailbox_receive: trio.MemoryReceiveChannel[Request] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.mailbox_send, self.mailbox_receive = trio.open_memory_channel[Request](MAILBOX_SIZE)

    @classmethod
    def from_row(cls, row: ThreadRow) -> "ThreadRecord":
        state = ThreadState(row.state)
        if state is ThreadState.RUNNING:  # a turn was open when the daemon stopped
            state = ThreadState.IDLE
        return cls(
            thread_id=row.thread_id,
            parent=row.parent,
            created_at=row.created_at,
            state=state,
            config=ThreadConfig.from_dict(row.config),
            usage=empty_usage() | dict(row.usage),
            active_turn=row.active_turn,
            extra=dict(row.extra),
        )

    def to_row(self) -> ThreadRow:
        return ThreadRow(
            thread_id=self.thread_id,
            parent=self.parent,
            created_at=self.created_at,
            state=self.state.value,
            config=self.config.to_dict(),
            usage=dict(self.usage),
            active_turn=self.active_turn,
            extra=dict(self.extra),
            updated_at=time.time(),
        )

    def to_object(self) -> dict[str, Any]:
        """The thread object of CONTRACT.md 2.5."""
        return {
            "thread_id": self.thread_id,
            "state": self.state.value,
            "parent": self.parent,
            "children": list(self.children),
            "config": self.config.to_dict(),
            "queued": self.queued,
            "usage": dict(self.usage),
            "created_at": self.created_at,
            "active_turn": self.active_turn,
            "last_seq": self.log.last_seq if self.log else None,
            **({"failed": self.failed} if self.failed else {}),
        }
