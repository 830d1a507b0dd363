"""Live fan-out of committed events.

The store writer calls ``publish`` after each commit, in commit order, so a listener
only ever sees durable events, each thread's in ``seq`` order. Listeners must not block:
they copy the event into their own bounded buffer (the wire server does its backpressure
there). A listener that raises is removed and logged; it never disturbs the writer.
"""

from __future__ import annotations

from typing import Callable

from echsd.events import Event
from echsd.logs import get_logger

log = get_logger(__name__)

Listener = Callable[[Event], None]
ALL = "*"


class Listening:
    """A registration; ``close()`` stops delivery (idempotent)."""

    def __init__(self, hub: "EventHub", key: str, fn: Listener) -> None:
        self._hub, self.key, self.fn = hub, key, fn

    def close(self) -> None:
        self._hub._remove(self)


class EventHub:
    def __init__(self) -> None:
        self._listeners: dict[str, list[Listening]] = {}

    def listen(self, thread_id: str, fn: Listener) -> Listening:
        """``thread_id`` may be ``"*"`` for every thread."""
        listening = Listening(self, thread_id, fn)
        self._listeners.setdefault(thread_id, []).append(listening)
        return listening

    def wants(self, thread_id: str) -> bool:
        """Whether anyone here listens to ``thread_id`` (itself or every thread)."""
        return ALL in self._listeners or thread_id in self._listeners

    def _remove(self, listening: Listening) -> None:
        group = self._listeners.get(listening.key)
        if group and listening in group:
            group.remove(listening)
            if not group:
                del self._listeners[listening.key]

    def publish(self, events: list[Event]) -> None:
        if not self._listeners:
            return
        everyone = self._listeners.get(ALL, ())
        for event in events:
            for listening in (*everyone, *self._listeners.get(event.thread_id, ())):
                try:
                    listening.fn(event)
                except Exception:
                    log.exception("event listener failed; removing it", thread_id=event.thread_id)
                    listening.close()
