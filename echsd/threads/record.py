"""What the supervisor keeps for every thread, whether or not its actor is running.

Thread metadata is loaded eagerly at start (cheap), histories lazily by the actor. A record
pairs the thread's ``ThreadCore`` (the one owner of its state; read freely, changed only
through its methods, by the thread's actor) with the IO handles around it: the event log,
the mailbox, and whether a worker runs or was given up.
"""

from __future__ import annotations

from typing import Any

import trio

from echsd.threads.core import ThreadCore
from echsd.threads.eventlog import ThreadLog
from echsd.threads.mailbox import Request

MAILBOX_SIZE = 1024


class ThreadRecord:
    __slots__ = ("core", "log", "actor_started", "failed", "mailbox_send", "mailbox_receive")

    def __init__(self, core: ThreadCore, log: ThreadLog) -> None:
        self.core = core  # replaced (rebuilt from the store) only when the worker crashed
        self.log = log
        self.actor_started = False
        self.failed: str | None = None  # set when the worker kept crashing and was given up
        self.mailbox_send, self.mailbox_receive = trio.open_memory_channel[Request](MAILBOX_SIZE)

    @property
    def thread_id(self) -> str:
        return self.core.thread_id

    def to_object(self) -> dict[str, Any]:
        """The thread object of CONTRACT.md 2.5."""
        data = self.core.snapshot()
        data["last_seq"] = self.log.last_seq
        if self.failed:
            data["failed"] = self.failed
        return data
