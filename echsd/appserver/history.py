"""A thread's past as the app-server protocol pages it (sans-IO): turns and their items.

The turns come from replaying the thread's event log through a ``ThreadTranslator`` with
``keep_turns`` (see ``translate``). Pages are newest first unless ``sortDirection`` is
``asc``; a cursor is the opaque position of the next page (the count of entries already
returned), or for items an ``{"type": "item", "itemId"}`` anchor to continue after.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from echsd.appserver.framing import INVALID_PARAMS, RpcError
from echsd.appserver.translate import ThreadTranslator
from echsd.appserver.turns import TurnView

DEFAULT_LIMIT = 50
MAX_LIMIT = 1000


def replay(thread_id: str, events: Iterable[Mapping[str, Any]]) -> ThreadTranslator:
    """A translator that has seen ``events`` (its ``turns`` hold the thread's past)."""
    translator = ThreadTranslator(thread_id, keep_turns=True)
    for event in events:
        translator.feed(event)
    return translator


def turns_page(turns: Sequence[TurnView], params: Mapping[str, Any]) -> dict[str, Any]:
    view = params.get("itemsView") or "full"
    ordered = _ordered(list(turns), params)
    start, end = _window(len(ordered), params, ordered_ids=None)
    data = [turn.to_turn(view) for turn in ordered[start:end]]
    return {"data": data, "nextCursor": str(end) if end < len(ordered) else None, "backwardsCursor": None}


def items_page(turns: Sequence[TurnView], params: Mapping[str, Any]) -> dict[str, Any]:
    wanted = params.get("turnId")
    if wanted is not None and not any(turn.id == wanted for turn in turns):
        raise RpcError(INVALID_PARAMS, f"no turn {wanted!r} in this thread")
    entries = [
        {"turnId": turn.id, "item": entry.item, "startedAtMs": entry.started_ms, "completedAtMs": entry.completed_ms}
        for turn in turns
        if wanted is None or turn.id == wanted
        for entry in turn.entries
    ]
    ordered = _ordered(entries, params)
    start, end = _window(len(ordered), params, ordered_ids=[entry["item"]["id"] for entry in ordered])
    return {"data": ordered[start:end], "nextCursor": str(end) if end < len(ordered) else None, "backwardsCursor": None}


def _ordered(values: list[Any], params: Mapping[str, Any]) -> list[Any]:
    direction = params.get("sortDirection") or "desc"
    if direction not in ("asc", "desc"):
        raise RpcError(INVALID_PARAMS, f"sortDirection must be asc or desc (got {direction!r})")
    return values if direction == "asc" else values[::-1]


def _window(total: int, params: Mapping[str, Any], ordered_ids: list[str] | None) -> tuple[int, int]:
    limit = params.get("limit")
    if limit is None:
        limit = DEFAULT_LIMIT
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
        raise RpcError(INVALID_PARAMS, "limit must be a non-negative integer")
    start = _cursor_position(params.get("cursor"), ordered_ids)
    return start, min(total, start + min(limit, MAX_LIMIT))


def _cursor_position(cursor: Any, ordered_ids: list[str] | None) -> int:
    if cursor is None:
        return 0
    if isinstance(cursor, str) and cursor.isdigit():
        return int(cursor)
    if isinstance(cursor, dict) and ordered_ids is not None and cursor.get("type") == "item":
        try:
            return ordered_ids.index(str(cursor.get("itemId"))) + 1
        except ValueError:
            raise RpcError(INVALID_PARAMS, f"no item {cursor.get('itemId')!r} to continue after") from None
    raise RpcError(INVALID_PARAMS, f"unknown cursor {cursor!r}: pass back a nextCursor this server returned")
