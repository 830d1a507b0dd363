"""Reading a long list from the daemon page by page.

``thread.events`` pages are read from the last seq seen until one comes back empty (a page
may be short of the limit: the daemon keeps each under a byte budget).
``thread.history``, ``thread.list`` and ``approval.list`` answer one page ``{items, offset, next_offset,
total}`` when asked with ``offset``/``limit``; a page can be shorter than asked (the
daemon's byte budget), so reading goes on until ``next_offset`` is null. Asking without
paging would be refused with ``too_large`` once the list outgrows a frame.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, AsyncIterator, Awaitable, Callable

if TYPE_CHECKING:
    from echsd.wire.client import Client

PAGE = 1000


async def read_all(fetch: Callable[..., Awaitable[dict[str, Any]]], *args: Any, offset: int = 0, **params: Any) -> list[Any]:
    """Every item of ``fetch(*args, **params, offset=..., limit=...)`` from ``offset``, page after page."""
    items: list[Any] = []
    position: int | None = offset
    while position is not None:
        page = await fetch(*args, **params, offset=position, limit=PAGE)
        items.extend(page["items"])
        position = page.get("next_offset")
    return items


def end_of(event: dict[str, Any]) -> int:
    """The last seq an entry covers (a gap covers a range; its own seq is before it)."""
    if event.get("event") == "events.gap":
        return int((event.get("data") or {}).get("to_seq", event["seq"]))
    return int(event["seq"])


async def event_pages(client: Client, thread_id: str, since: int) -> AsyncIterator[list[dict[str, Any]]]:
    """The thread's stored events after ``since``, a page at a time, until an empty page."""
    position = since
    while True:
        page = await client.thread_events(thread_id, since=position, limit=PAGE)
        if not page:
            return
        yield page
        position = end_of(page[-1])
