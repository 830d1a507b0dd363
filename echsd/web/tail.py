"""A thread's log from its end: what the web view opens a thread with, and the earlier
pages it loads on demand.

An overnight agent's log holds tens of thousands of events; a page shows its last ones
(``tail_since``: at most ``events`` of them and ``TAIL_BYTES``, from a turn's start where
one is among them) and reads earlier ones a page at a time, backwards (``earlier``).
Both are the replay-from-seq machinery's: the stream replays after the seq ``tail_since``
gives, and ``earlier`` reads the stored log forwards with ``thread.events`` from the seq
where the page before ``before`` begins.
"""

from __future__ import annotations

from typing import Any

from echsd.events.turn import TurnStarted
from echsd.ops.threads import Events, Get
from echsd.router.reads import MAX_EVENTS_PER_READ
from echsd.store import queries
from echsd.web.context import WebContext
from echsd.web.http import HttpError, HttpRequest

TAIL_EVENTS = 500  # a page's events when the request names no number
MAX_TAIL_EVENTS = 5_000
TAIL_BYTES = 1024 * 1024  # the stored bytes of one page of the tail (one event more when it alone is bigger)


def tail_events(request: HttpRequest, name: str) -> int:
    """The number of events a request asks for (``name``), within 1..MAX_TAIL_EVENTS."""
    asked = request.int_query(name)
    if asked is None:
        return TAIL_EVENTS
    if not 1 <= asked <= MAX_TAIL_EVENTS:
        raise HttpError(400, "bad_request", f"{name} must be between 1 and {MAX_TAIL_EVENTS}")
    return asked


async def tail_since(context: WebContext, thread_id: str, before: int, events: int) -> int:
    """The seq after which the page of events just before ``before`` begins (0: from the start)."""
    turn = TurnStarted.type_name
    return await context.store.read(lambda conn: queries.tail_start(conn, thread_id, before, events, TAIL_BYTES, turn))


async def earlier(context: WebContext, request: HttpRequest) -> Any:
    """``GET /api/threads/ID/earlier?before=N&limit=M``: the page of stored events just
    before seq N, oldest first, as ``{thread_id, since, before, events}``; ``since`` 0:
    there are none before these."""
    thread_id = request.params["thread_id"]
    before = request.int_query("before")
    if before is None or before < 1:
        raise HttpError(400, "bad_request", "before must be a seq >= 1")
    thread = await context.router.run(Get(thread_id=thread_id))  # not_found for an unknown thread
    before = min(before, thread["last_seq"] + 1)
    since = await tail_since(context, thread_id, before, tail_events(request, "limit"))
    page: list[dict[str, Any]] = []
    after = since
    while after < before - 1:  # thread.events pages are bounded in bytes too: read on until ``before``
        read = await context.router.run(Events(thread_id=thread_id, since=after, limit=min(before - 1 - after, MAX_EVENTS_PER_READ)))
        fresh = [event for event in read if event["seq"] < before]
        page.extend(fresh)
        if len(fresh) < len(read) or not fresh:
            break
        after = _end_of(fresh[-1])
    return {"thread_id": thread_id, "since": since, "before": before, "events": page}


def _end_of(envelope: dict[str, Any]) -> int:
    """The last seq an entry of ``thread.events`` covers (a gap covers a range)."""
    if envelope.get("event") == "events.gap":
        return int(envelope["data"]["to_seq"])
    return int(envelope["seq"])
