"""Which app-server connections watch which threads (sans-IO bookkeeping, one per listener).

The Codex TUI starts a thread the moment it opens (``thread/start``), before the user has
typed anything; quitting right away would leave an empty echsd thread behind each time.
So a connection remembers the threads it started, and when it leaves it deletes those
that never took any input, unless another app-server client is watching one (see
``Connection``). ``untouched`` is the test on a thread's first events.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

CREATION_EVENTS = frozenset({"thread.created", "thread.state"})  # what a thread nobody used has
PROBE_EVENTS = 8  # a thread with more events than this has certainly been used


class Presence:
    def __init__(self) -> None:
        self._watchers: dict[str, set[int]] = {}
        self.connections: set[int] = set()  # connected, or still tidying up after leaving

    def joined(self, connection: int) -> None:
        self.connections.add(connection)

    def left(self, connection: int) -> None:
        self.connections.discard(connection)

    def watch(self, thread_id: str, connection: int) -> None:
        self._watchers.setdefault(thread_id, set()).add(connection)

    def unwatch(self, thread_id: str, connection: int) -> None:
        watchers = self._watchers.get(thread_id)
        if watchers is not None:
            watchers.discard(connection)
            if not watchers:
                del self._watchers[thread_id]

    def watched(self, thread_id: str) -> bool:
        return thread_id in self._watchers


def untouched(first_events: Iterable[Mapping[str, Any]]) -> bool:
    """True when a thread's first ``PROBE_EVENTS`` events say nobody ever used it: only its
    creation is there (no input, turn, config change or sub-agent)."""
    events = list(first_events)
    return len(events) < PROBE_EVENTS and all(event.get("event") in CREATION_EVENTS for event in events)
