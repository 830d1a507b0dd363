"""Live fan-out of committed events.

The store writer calls ``publish`` after each commit, in commit order, so a listener
only ever sees durable events, each thread's in ``seq`` order. Listeners must not block:
they copy the event into their own bounded buffer (the wire server does its backpressure
there). A listener that raises is removed and logged; it never disturbs the writer.
"""

from __future__ import annotations

from typing import Callable, Mapping

from echsd.events import Event, EventData
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


class EventTaps:
    """This node's own committed events, to local observers by event type (metrics, hooks).

    Called by the store writer after each commit, beside the hub (events another node
    committed, which the hub relays, are that node's to observe). A type nobody taps, such
    as every streamed delta, costs one dict lookup; an observer that raises is logged and
    kept (it is our own code, not a client's).
    """

    def __init__(self) -> None:
        self._by_type: dict[str, list[Listener]] = {}

    def tap(self, taps: Mapping[type[EventData], Listener]) -> None:
        for kind, fn in taps.items():
            self._by_type.setdefault(kind.type_name, []).append(fn)

    def __call__(self, events: list[Event]) -> None:
        by_type = self._by_type
        if not by_type:
            return
        for event in events:
            fns = by_type.get(event.type)
            if fns is None:
                continue
            for fn in fns:
                try:
                    fn(event)
                except Exception:
                    log.exception("event tap failed", event_type=event.type, thread_id=event.thread_id)
