"""The blackboard ops as clients see them (``blackboard.get|set|list|delete``): entry
objects, pages, and ``writer`` null (a client writes in no thread's name)."""

from __future__ import annotations

from typing import Any

from echsd.blackboard.board import Blackboard
from echsd.blackboard.entries import entry_object
from echsd.paging import page_of


class BlackboardService:
    def __init__(self, board: Blackboard, page_bytes: int) -> None:
        self.board = board
        self.page_bytes = page_bytes  # what one page of blackboard.list may hold

    def get(self, key: str) -> dict[str, Any]:
        return entry_object(self.board.get(key))

    async def set(self, key: str, value: Any, if_version: int | None = None) -> dict[str, Any]:
        return entry_object(await self.board.set(key, value, if_version=if_version))

    async def delete(self, key: str, if_version: int | None = None) -> dict[str, Any]:
        return entry_object(await self.board.delete(key, if_version=if_version))

    def list(self, prefix: str = "", offset: int | None = None, limit: int | None = None) -> list[dict[str, Any]] | dict[str, Any]:
        """The entries under ``prefix`` in key order; with ``offset``/``limit``, one page."""
        entries = self.board.list(prefix)
        if offset is None and limit is None:
            return [entry_object(entry) for entry in entries]
        return page_of(entries, offset, limit, self.page_bytes, entry_object)
