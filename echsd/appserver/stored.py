"""Reading a thread's stored events through ``thread.events`` (a forward read from a seq,
run by the router, so any node's thread reads the same), forwards a page at a time or backwards a window at a time, so that a request reads
the part of a long thread it needs rather than all of it.

Folded ranges (retention) come as ``events.gap`` envelopes, which readers skip.
"""

from __future__ import annotations

from typing import Any, AsyncIterator, Callable, Mapping

from echsd.ops.threads import Events
from echsd.threads.services import OpRunner

PAGE = 2000  # events per forward read
FIRST_WINDOW = 128  # events read by the first step of a backward scan; each next step reads twice as many
MAX_WINDOW = 8192

Envelope = dict[str, Any]


async def stored_pages(ops: OpRunner, thread_id: str, *, after: int = 0, upto: int | None = None) -> AsyncIterator[list[Envelope]]:
    """The thread's event envelopes with ``after < seq`` (``<= upto`` when given), in
    order, a page at a time."""
    since = after
    while upto is None or since < upto:
        limit = PAGE if upto is None else min(PAGE, upto - since)
        envelopes = await ops.run(Events(thread_id=thread_id, since=since, limit=limit))
        if upto is not None:
            envelopes = [envelope for envelope in envelopes if envelope["seq"] <= upto]
        if envelopes:
            yield envelopes
        if not envelopes:
            return
        for envelope in envelopes:
            since = max(since, int(envelope["seq"]), int((envelope.get("data") or {}).get("to_seq") or 0))


async def scan_back(
    ops: OpRunner, thread_id: str, before: int, wanted: Callable[[Envelope], bool], count: int
) -> list[Envelope]:
    """Up to ``count`` envelopes with ``seq < before`` that ``wanted`` picks, newest first,
    read backwards a window at a time, each larger than the last (stopping as soon as
    there are enough), so that what is read is in proportion to how far back they are."""
    found: list[Envelope] = []
    upto, size = before - 1, FIRST_WINDOW
    while upto > 0 and len(found) < count:
        after = max(0, upto - size)
        window: list[Envelope] = []
        async for page in stored_pages(ops, thread_id, after=after, upto=upto):
            window += [envelope for envelope in page if wanted(envelope)]
        found += reversed(window)
        upto, size = after, min(size * 2, MAX_WINDOW)
    return found[:count]


def is_turn_start(envelope: Mapping[str, Any]) -> bool:
    return envelope.get("event") == "turn.started"


def sets_cwd(envelope: Mapping[str, Any]) -> bool:
    """A thread's creation, or a config change that moved its cwd."""
    data = envelope.get("data") or {}
    return envelope.get("event") == "thread.created" or (envelope.get("event") == "thread.configured" and "cwd" in (data.get("changed") or ()))


def cwd_set_by(envelope: Mapping[str, Any]) -> str:
    data = envelope.get("data") or {}
    config = (data.get("thread") or {}).get("config") if envelope.get("event") == "thread.created" else data.get("config")
    return str((config or {}).get("cwd") or "")


async def cwd_before(ops: OpRunner, thread_id: str, seq: int) -> str | None:
    """The thread's cwd just before ``seq`` (None: no event left that says)."""
    found = await scan_back(ops, thread_id, seq, sets_cwd, 1)
    return cwd_set_by(found[0]) if found else None
