"""How much one app-server connection may have under way, and how big an answer may be.

The protocol lets a client send requests without waiting for answers, and some answers
are large (a thread read with all its turns). The reader therefore takes a request only
while fewer than ``[tuning] app_server_requests`` of the connection's requests are being
answered and its unsent answers (``Outbox.answer_bytes``) are under ``[tuning]
max_message_bytes``; a client that asks without reading stops being read (TCP pushes
back), its answers still all come, in the order they are ready.

Reads of a thread's past (``history.Past``) are the expensive ones: they run one at a time
per connection, start only once that connection's unsent answers are under budget, and
``HISTORY_READS`` at once in the whole daemon (``AppContext.history_reads``), so what they
hold is bounded however many clients ask. An answer larger than ``max_message_bytes`` is
refused with an error that says where to read it in pages.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import AsyncIterator

import trio

from echsd.appserver.outbox import Outbox

HISTORY_READS = 2  # a thread's past read for answers at once, daemon-wide


class Intake:
    def __init__(self, outbox: Outbox, max_requests: int, answer_bytes: int, history_reads: trio.CapacityLimiter) -> None:
        self.outbox = outbox
        self.max_requests = max_requests
        self.answer_bytes = answer_bytes  # unsent answers past which nothing more is taken; also the largest answer
        self.requests = 0  # being answered
        self._history_reads = history_reads
        self._history_lock = trio.Lock()
        self._moved = trio.Event()

    def moved(self) -> None:
        """Something was sent or answered: waiters check their room again."""
        moved, self._moved = self._moved, trio.Event()
        moved.set()

    async def admit(self) -> None:
        """Wait until the connection may take one more request, and count it."""
        while self.requests >= self.max_requests or self.outbox.answer_bytes >= self.answer_bytes:
            await self._moved.wait()
        self.requests += 1

    def done(self) -> None:
        self.requests -= 1
        self.moved()

    @asynccontextmanager
    async def history(self) -> AsyncIterator[None]:
        """Room to read a thread's past for an answer (see the module doc)."""
        async with self._history_lock:
            while self.outbox.answer_bytes >= self.answer_bytes:
                await self._moved.wait()
            async with self._history_reads:
                yield

    def too_large(self, size: int) -> bool:
        return size > self.answer_bytes
