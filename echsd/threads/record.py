"""What the supervisor keeps for every thread, whether or not its actor is running.

Thread metadata is loaded eagerly at start (cheap), histories lazily by the actor. A record
pairs the thread's ``ThreadCore`` (the one owner of its state; read freely, changed only
through its methods, by the thread's actor) with the IO handles around it: the event log,
the mailbox, and whether a worker runs or was given up.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import trio

from echsd.errors import Unavailable
from echsd.threads.core import ThreadCore
from echsd.threads.eventlog import ThreadLog
from echsd.threads.mailbox import Request

MAILBOX_SIZE = 1024


@dataclass
class GivenUp:
    reason: str
    retry_at: float  # time.monotonic() after which the next request restarts the worker
    refusing: trio.CancelScope = field(default_factory=trio.CancelScope)
    killing: bool = False  # an offline kill owns the core: no restart meanwhile

    def cooled_down(self) -> bool:
        return not self.killing and time.monotonic() >= self.retry_at

    def refusal(self, thread_id: str) -> Unavailable:
        wait_s = max(0.0, self.retry_at - time.monotonic())
        return Unavailable(f"thread {thread_id} is unavailable: {self.reason}; its worker is tried again on a request after {wait_s:.0f} s")


class ThreadRecord:
    __slots__ = ("core", "log", "actor_started", "failed", "mailbox_send", "mailbox_receive", "stop", "node")

    def __init__(self, core: ThreadCore, log: ThreadLog, node: str = "") -> None:
        self.core = core  # replaced (rebuilt from the store) only when the worker crashed
        self.log = log
        self.actor_started = False
        self.failed: GivenUp | None = None  # set while the worker, which kept crashing, is given up
        self.mailbox_send, self.mailbox_receive = trio.open_memory_channel[Request](MAILBOX_SIZE)
        self.stop = trio.CancelScope()  # cancelled when another node takes the thread over
        self.node = node  # the daemon that runs it (``--node-id``)

    @property
    def thread_id(self) -> str:
        return self.core.thread_id

    def to_object(self) -> dict[str, Any]:
        """The thread object of CONTRACT.md 2.5."""
        data = self.core.snapshot()
        data["last_seq"] = self.log.last_seq
        data["node"] = self.node
        if self.failed is not None:
            data["failed"] = self.failed.reason
        return data
