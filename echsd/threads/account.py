"""The account's rate limits as the endpoint last reported them (headers or
``codex.rate_limits`` events, on any thread's request), for ``echs status``."""

from __future__ import annotations

import time
from typing import Any


class AccountLimits:
    def __init__(self) -> None:
        self._limits: dict[str, dict[str, Any]] = {}
        self._updated_at: float | None = None

    def record(self, limits: list[dict[str, Any]]) -> None:
        for limit in limits:
            self._limits[str(limit.get("limit_id") or "default")] = limit
        self._updated_at = time.time()

    def snapshot(self) -> dict[str, Any] | None:
        if self._updated_at is None:
            return None
        return {"updated_at": self._updated_at, "limits": list(self._limits.values())}
