"""Reading a long list from the daemon page by page.

``thread.history`` and ``thread.list`` answer one page ``{items, offset, next_offset,
total}`` when asked with ``offset``/``limit``; a page can be shorter than asked (the
daemon's byte budget), so reading goes on until ``next_offset`` is null. Asking without
paging would be refused with ``too_large`` once the list outgrows a frame.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable

PAGE = 1000


async def read_all(fetch: Callable[..., Awaitable[dict[str, Any]]], *args: Any) -> list[Any]:
    """Every item of ``fetch(*args, offset=..., limit=...)``, page after page."""
    items: list[Any] = []
    offset: int | None = 0
    while offset is not None:
        page = await fetch(*args, offset=offset, limit=PAGE)
        items.extend(page["items"])
        offset = page.get("next_offset")
    return items
