"""A thread's past as the app-server protocol pages it: turns and their items, read from
the event log only as far as a page needs.

A page is made by replaying part of the log through a ``ThreadTranslator`` that keeps
turns: from the first event of the oldest turn the page shows (found by scanning the log
backwards from where the page ends) through the end of the newest one. What happens
after that window and still changes a turn inside it is followed too: an exec session
that ends later completes its item in the turn that started it (the translator's
``follow`` reads on, cheaply, until its sessions are over). The one thing a window cannot
see is the thread's cwd at its start (commands show where they ran): it is seeded with
the cwd at the window's end (the thread's current one, or the one the cursor carries),
and if the replay meets a change of cwd before that point, the cwd is looked up backwards
from the window's start and the window replayed again. So a page reads the newest part of
a thread, not all of it, and is the same as a replay of the whole log would give.

Pages are newest first unless ``sortDirection`` is ``asc``. A cursor is opaque: the
``turn.started`` seq of a turn, an item's index in it, and the cwd there; an item list
also takes ``{"type": "item", "itemId"}`` to continue after that item.

What one request holds is bounded in bytes (``[tuning] max_message_bytes``, the answer
limit): a replay stops once it has read ``REPLAY_FACTOR`` times that much of the log
(``ReplayTooLarge``); a page that would need more is asked again for half as many turns or
items, and a page is cut to half the answer limit (at least one entry), the rest left for
its ``nextCursor``. Only a whole thread's turns (``thread/read``, ``thread/resume``), or
one turn, past the limit are refused, with the way to read them in pages.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Mapping, TypeVar

import orjson

from echsd.appserver.framing import INVALID_PARAMS, INVALID_REQUEST, RpcError
from echsd.appserver.stored import cwd_before, is_turn_start, scan_back, stored_pages
from echsd.appserver.translate import ThreadTranslator
from echsd.appserver.turns import Entry, TurnView
from echsd.ops.threads import Get

if TYPE_CHECKING:
    from echsd.appserver.connection import Connection
    from echsd.appserver.context import AppContext

DEFAULT_LIMIT = 50
MAX_LIMIT = 1000
FIRST_TURNS = 4  # turns replayed first for a page of items; twice as many each time short
CURSOR_PREFIX = "ec1."
REPLAY_FACTOR = 2  # a replay reads at most this many times the answer limit of the log (deltas and the items they make)
T = TypeVar("T")


class ReplayTooLarge(RpcError):
    """A replay read more of the log than one answer may hold."""

    def __init__(self, message: str) -> None:
        super().__init__(INVALID_REQUEST, message)


@dataclass(frozen=True)
class Position:
    """Where a page ends: a turn (the seq of its ``turn.started``), an item in it (its
    index; -1 for the turn itself) and the thread's cwd when the turn started."""

    seq: int
    index: int
    cwd: str

    def encode(self) -> str:
        raw = json.dumps([self.seq, self.index, self.cwd], separators=(",", ":")).encode()
        return CURSOR_PREFIX + base64.urlsafe_b64encode(raw).decode().rstrip("=")

    @classmethod
    def decode(cls, cursor: str) -> Position:
        try:
            body = cursor.removeprefix(CURSOR_PREFIX)
            seq, index, cwd = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        except (ValueError, TypeError, binascii.Error):
            raise RpcError(INVALID_PARAMS, f"unknown cursor {cursor!r}: pass back a nextCursor this server returned") from None
        if not cursor.startswith(CURSOR_PREFIX) or not (isinstance(seq, int) and seq > 0 and isinstance(index, int) and isinstance(cwd, str)):
            raise RpcError(INVALID_PARAMS, f"unknown cursor {cursor!r}: pass back a nextCursor this server returned")
        return cls(seq, index, cwd)


@dataclass
class Located:
    """An item of a replayed page with its position."""

    turn: TurnView
    index: int
    entry: Entry

    @property
    def position(self) -> Position:
        return Position(self.turn.seq, self.index, self.turn.cwd)

    def to_entry(self) -> dict[str, Any]:
        return {"turnId": self.turn.id, "item": self.entry.item, "startedAtMs": self.entry.started_ms, "completedAtMs": self.entry.completed_ms}


class Past:
    """One thread's past, for one request."""

    def __init__(self, context: AppContext, thread: Mapping[str, Any], answer_bytes: int) -> None:
        self.ops = context.router
        self.thread_id = str(thread["thread_id"])
        self.end = int(thread.get("last_seq") or 0) + 1  # the seq the next event will have
        self.cwd = str((thread.get("config") or {}).get("cwd") or "")
        self.answer_bytes = answer_bytes
        self.replay_bytes = REPLAY_FACTOR * answer_bytes
        self.undone = set(thread.get("undone_turns") or ())  # turns an undo took back: not shown

    def _turn_start(self, envelope: Mapping[str, Any]) -> bool:
        return is_turn_start(envelope) and (envelope.get("data") or {}).get("turn_id") not in self.undone

    @classmethod
    async def open(cls, conn: Connection, thread_id: str) -> Past:
        """The thread's past as it is now (wherever it runs)."""
        return cls(conn.context, await conn.run_op(Get(thread_id=thread_id)), conn.intake.answer_bytes)

    async def everything(self) -> ThreadTranslator:
        """The whole log replayed (for the requests that ask for every turn)."""
        try:
            translator, _ = await self.replay(1)
        except ReplayTooLarge:
            raise ReplayTooLarge(
                f"the turns of thread {self.thread_id} are more than an answer may hold ({self.answer_bytes:,} bytes, "
                "[tuning] max_message_bytes): read them in pages with thread/turns/list"
            ) from None
        return translator

    async def turns_page(self, params: Mapping[str, Any]) -> dict[str, Any]:
        view, limit, desc = params.get("itemsView") or "full", limit_of(params), descending(params)
        cursor = params.get("cursor")
        if cursor is not None and not isinstance(cursor, str):
            raise RpcError(INVALID_PARAMS, f"unknown cursor {cursor!r}: pass back a nextCursor this server returned")
        at = Position.decode(cursor) if cursor is not None else None

        async def read(count: int) -> tuple[list[TurnView], bool]:
            if desc:
                turns, more = await self._turns_before(at, count)
                return turns[::-1], more
            return await self._turns_from(at, count)

        turns, more = await self._fewer_if_too_large(read, limit, "turns")
        shown, cut = self._within_page([turn.to_turn(view) for turn in turns])
        turns, more = turns[: len(shown)], more or cut
        next_cursor = Position(turns[-1].seq, -1, turns[-1].cwd).encode() if more and turns else None
        return {"data": shown, "nextCursor": next_cursor, "backwardsCursor": None}

    async def items_page(self, params: Mapping[str, Any]) -> dict[str, Any]:
        limit, desc = limit_of(params), descending(params)
        at = await self._item_cursor(params.get("cursor"))
        turn_id = params.get("turnId")

        async def read(count: int) -> tuple[list[Located], bool]:
            if turn_id is not None:
                return await self._items_of_turn(str(turn_id), at, count, desc)
            if desc:
                return await self._items_before(at, count)
            return await self._items_from(at, count)

        located, more = await self._fewer_if_too_large(read, limit, "items")
        shown, cut = self._within_page([item.to_entry() for item in located])
        located, more = located[: len(shown)], more or cut
        next_cursor = located[-1].position.encode() if more and located else None
        return {"data": shown, "nextCursor": next_cursor, "backwardsCursor": None}

    async def _fewer_if_too_large(self, read: Callable[[int], Awaitable[tuple[list[T], bool]]], limit: int, what: str) -> tuple[list[T], bool]:
        """``read(limit)``; while its replay is too large, ``read`` half as many (the rest
        is the next page's). One entry that is too large alone is refused."""
        while True:
            try:
                found, more = await read(limit)
            except ReplayTooLarge:
                if limit <= 1:
                    raise ReplayTooLarge(
                        f"one of the {what} of thread {self.thread_id} is more than an answer may hold "
                        f"({self.answer_bytes:,} bytes, [tuning] max_message_bytes)"
                    ) from None
                limit //= 2
                continue
            return found, more

    def _within_page(self, shown: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], bool]:
        """The first entries that fit half the answer limit (at least one); whether any were cut."""
        budget, size = self.answer_bytes // 2, 0
        for index, entry in enumerate(shown):
            size += len(orjson.dumps(entry))
            if index and size > budget:
                return shown[:index], True
        return shown, False

    # -- turns ------------------------------------------------------------------------------

    async def _turns_before(self, at: Position | None, limit: int) -> tuple[list[TurnView], bool]:
        """The ``limit`` turns that started before ``at`` (the newest if None), oldest first."""
        starts = await scan_back(self.ops, self.thread_id, at.seq if at else self.end, self._turn_start, limit + 1)
        wanted = starts[:limit]
        if not wanted:
            return [], False
        translator, _ = await self.replay(wanted[-1]["seq"], through=wanted[0]["seq"], seed=self._seed(at))
        return translator.turns, len(starts) > limit

    async def _turns_from(self, at: Position | None, limit: int) -> tuple[list[TurnView], bool]:
        """The ``limit`` turns after ``at`` (from the first if None), oldest first (the
        replay starts at ``at``'s turn, where the cursor knows the cwd)."""
        start, seed = (at.seq, (at.cwd, at.seq)) if at else (1, None)

        def after(turns: list[TurnView]) -> list[TurnView]:
            return [turn for turn in turns if at is None or turn.seq > at.seq]

        translator, stopped = await self.replay(start, seed=seed, enough=lambda t: len(after(t.turns)) >= limit)
        return after(translator.turns)[:limit], stopped

    # -- items ------------------------------------------------------------------------------

    async def _items_before(self, at: Position | None, limit: int) -> tuple[list[Located], bool]:
        """The ``limit`` items before ``at`` (the newest if None), newest first: the newest
        turns are replayed, more of them until there are enough items."""
        count = min(FIRST_TURNS, max(limit, 1))
        while True:
            starts = await scan_back(self.ops, self.thread_id, at.seq + 1 if at else self.end, self._turn_start, count)
            if not starts:
                return [], False
            translator, _ = await self.replay(starts[-1]["seq"], through=starts[0]["seq"], seed=self._seed(at))
            located = [item for item in locate(translator.turns) if at is None or (item.turn.seq, item.index) < (at.seq, at.index)]
            if len(located) > limit or len(starts) < count:
                return located[::-1][:limit], len(located) > limit
            count *= 2

    async def _items_from(self, at: Position | None, limit: int) -> tuple[list[Located], bool]:
        start, seed = (at.seq, (at.cwd, at.seq)) if at else (1, None)

        def after(items: list[Located]) -> list[Located]:
            return [item for item in items if at is None or (item.turn.seq, item.index) > (at.seq, at.index)]

        translator, stopped = await self.replay(start, seed=seed, enough=lambda t: len(after(locate(t.turns))) > limit)
        located = after(locate(translator.turns))
        return located[:limit], len(located) > limit or stopped

    async def _items_of_turn(self, turn_id: str, at: Position | None, limit: int, desc: bool) -> tuple[list[Located], bool]:
        found = await scan_back(self.ops, self.thread_id, self.end, lambda e: self._turn_start(e) and (e.get("data") or {}).get("turn_id") == turn_id, 1)
        if not found:
            raise RpcError(INVALID_PARAMS, f"no turn {turn_id!r} in this thread")
        translator, _ = await self.replay(found[0]["seq"], through=found[0]["seq"], seed=(self.cwd, self.end))
        located = locate(translator.turns)
        if at is not None:
            located = [item for item in located if (item.index < at.index if desc else item.index > at.index)]
        if desc:
            located.reverse()
        return located[:limit], len(located) > limit

    async def _item_cursor(self, cursor: Any) -> Position | None:
        """A cursor this server made, or ``{"type": "item", "itemId"}``: the item is looked
        for from the newest turns backwards."""
        if cursor is None or isinstance(cursor, str):
            return Position.decode(cursor) if cursor is not None else None
        if not (isinstance(cursor, dict) and cursor.get("type") == "item"):
            raise RpcError(INVALID_PARAMS, f"unknown cursor {cursor!r}: pass back a nextCursor this server returned")
        count = FIRST_TURNS
        while True:
            starts = await scan_back(self.ops, self.thread_id, self.end, self._turn_start, count)
            translator, _ = await self.replay(starts[-1]["seq"], seed=(self.cwd, self.end)) if starts else (None, False)
            for item in locate(translator.turns) if translator else ():
                if item.entry.item["id"] == cursor.get("itemId"):
                    return item.position
            if len(starts) < count:
                raise RpcError(INVALID_PARAMS, f"no item {cursor.get('itemId')!r} to continue after")
            count *= 2

    # -- replaying ---------------------------------------------------------------------------

    def _seed(self, at: Position | None) -> tuple[str, int]:
        """The cwd known at the end of a backwards page: the cursor's, else the current one."""
        return (at.cwd, at.seq) if at is not None else (self.cwd, self.end)

    async def replay(
        self,
        start: int,
        *,
        through: int | None = None,
        seed: tuple[str, int] | None = None,
        enough: Callable[[ThreadTranslator], bool] | None = None,
    ) -> tuple[ThreadTranslator, bool]:
        """Translate the turns from the one that starts at seq ``start`` (or the first
        after it) through the one that starts at ``through``, or until ``enough`` holds at a
        turn's start (None, None: to the end); then follow what still changes them. ``seed``:
        the thread's cwd and the seq where it was that. Also says whether it stopped before
        the log's end."""
        translator, stopped, moved = await self._replay(start, through, seed, enough)
        if seed is not None and moved is not None and moved < seed[1]:  # the cwd changed in between: look it up
            translator, stopped, _ = await self._replay(start, through, (await cwd_before(self.ops, self.thread_id, start) or "", start), enough)
        return translator, stopped

    async def _replay(
        self, start: int, through: int | None, seed: tuple[str, int] | None, enough: Callable[[ThreadTranslator], bool] | None
    ) -> tuple[ThreadTranslator, bool, int | None]:
        translator = ThreadTranslator(self.thread_id, keep_turns=True, undone=self.undone)
        if seed is not None:
            translator.cwd = seed[0]
        watch_until = seed[1] if seed is not None else 0  # cwd changes before this seq matter
        following = False
        read, budget = 0, self.replay_bytes
        async for page in stored_pages(self.ops, self.thread_id, after=start - 1):
            for envelope in page:
                if not following and self._turn_start(envelope) and translator.turns:
                    following = (through is not None and envelope["seq"] > through) or (enough is not None and enough(translator))
                if not following:
                    read += len(orjson.dumps(envelope))
                    if read > budget:
                        raise ReplayTooLarge(f"the replay read more than {budget:,} bytes of the log")
                    translator.feed(envelope)
                    continue
                translator.follow(envelope)
                if not translator.sessions and envelope["seq"] >= watch_until:
                    return translator, True, translator.cwd_moved_at
        return translator, following, translator.cwd_moved_at


def locate(turns: list[TurnView]) -> list[Located]:
    return [Located(turn, index, entry) for turn in turns for index, entry in enumerate(turn.entries)]


def limit_of(params: Mapping[str, Any]) -> int:
    limit = params.get("limit")
    if limit is None:
        return DEFAULT_LIMIT
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
        raise RpcError(INVALID_PARAMS, "limit must be a non-negative integer")
    return min(limit, MAX_LIMIT)


def descending(params: Mapping[str, Any]) -> bool:
    direction = params.get("sortDirection") or "desc"
    if direction not in ("asc", "desc"):
        raise RpcError(INVALID_PARAMS, f"sortDirection must be asc or desc (got {direction!r})")
    return direction == "desc"
