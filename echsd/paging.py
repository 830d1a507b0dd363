"""Pages of a list answer (``offset``/``limit``), bounded in bytes as well as in items.

Shared by the ops that may answer with long lists (``thread.list``, ``thread.history``,
``blackboard.list``), so every paged answer has one shape: ``{items, offset, next_offset,
total}``.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence, TypeVar

import orjson

MAX_PAGE_ITEMS = 10_000
T = TypeVar("T")


def page_of(entries: Sequence[T], offset: int | None, limit: int | None, budget: int, build: Callable[[T], Any]) -> dict[str, Any]:
    """``{items, offset, next_offset, total}``: from ``offset``, at most ``limit`` built
    items, stopping before their JSON size would pass ``budget`` (at least one item);
    ``next_offset`` is None after the last page."""
    offset = offset or 0
    limit = min(limit or MAX_PAGE_ITEMS, MAX_PAGE_ITEMS)
    items: list[Any] = []
    size = 0
    position = offset
    while position < len(entries) and len(items) < limit:
        item = build(entries[position])
        size += len(orjson.dumps(item))
        if items and size > budget:
            break
        items.append(item)
        position += 1
    return {"items": items, "offset": offset, "next_offset": position if position < len(entries) else None, "total": len(entries)}
