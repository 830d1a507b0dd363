"""Reading a thread's stored events in pages, through ``ThreadService.events``."""

from __future__ import annotations

from typing import Any, AsyncIterator

from echsd.threads.service import ThreadService

PAGE = 2000


async def stored_pages(service: ThreadService, thread_id: str, *, page: int = PAGE) -> AsyncIterator[list[dict[str, Any]]]:
    """The thread's event envelopes from seq 1 on, a page at a time (folded ranges come as
    ``events.gap`` envelopes, which readers skip)."""
    since = 0
    while True:
        envelopes = await service.events(thread_id, since, page)
        if envelopes:
            yield envelopes
        if len(envelopes) < page:
            return
        for envelope in envelopes:
            since = max(since, int(envelope["seq"]), int((envelope.get("data") or {}).get("to_seq") or 0))

