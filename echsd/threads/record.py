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
from echsd.threads.activity import Activity, waiting_on
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
    """Cheap while idle (a start loads one per stored thread): the mailbox, the dearest
    part, is opened on first use."""

    __slots__ = ("core", "log", "actor_started", "failed", "_mailbox", "stop", "node", "activity")

    def __init__(self, core: ThreadCore, log: ThreadLog, node: str = "") -> None:
        self.core = core  # replaced (rebuilt from the store) only when the worker crashed
        self.log = log
        self.actor_started = False
        self.failed: GivenUp | None = None  # set while the worker, which kept crashing, is given up
        self._mailbox: tuple[trio.MemorySendChannel[Request], trio.MemoryReceiveChannel[Request]] | None = None
        self.stop = trio.CancelScope()  # cancelled when another node takes the thread over
        self.node = node  # the daemon that runs it (``--node-id``)
        self.activity = Activity()  # what its running turn waits on (noted by the actor's tasks)

    @property
    def mailbox_send(self) -> trio.MemorySendChannel[Request]:
        return self._open_mailbox()[0]

    @property
    def mailbox_receive(self) -> trio.MemoryReceiveChannel[Request]:
        return self._open_mailbox()[1]

    def _open_mailbox(self) -> tuple[trio.MemorySendChannel[Request], trio.MemoryReceiveChannel[Request]]:
        if self._mailbox is None:
            self._mailbox = trio.open_memory_channel(MAILBOX_SIZE)
        return self._mailbox

    @property
    def thread_id(self) -> str:
        return self.core.thread_id

    def to_object(self) -> dict[str, Any]:
        """The thread object of CONTRACT.md 2.5."""
        data = self.core.snapshot()
        data["last_seq"] = self.log.last_seq
        data["node"] = self.node
        data["waiting_on"] = self.waiting_on()
        if self.failed is not None:
            data["failed"] = self.failed.reason
        return data

    def waiting_on(self) -> dict[str, Any] | None:
        given_up = self.failed.reason if self.failed is not None else None
        return waiting_on(self.core, self.activity, last_event_at=self.log.last_at, given_up=given_up)
