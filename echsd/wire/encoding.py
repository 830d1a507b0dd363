"""How a connection's events are written: MessagePack frames (the native wire) or
Server-Sent Events (the web view). The outbox, the subscriptions and their seam between
replay and live are the same for both; only these few functions differ.

``of_event`` encodes an event once for every connection of an encoding (the hub hands
every listener the same object, one event at a time).
"""

from __future__ import annotations

from typing import Any, Callable

import orjson

from echsd.events import Event
from echsd.wire.codec import encode_batch, packb


class Encoding:
    __slots__ = ("name", "envelope", "batch", "_last_event", "_last_bytes")

    def __init__(self, name: str, envelope: Callable[[dict[str, Any]], bytes], batch: Callable[[list[bytes], int], bytes]) -> None:
        self.name = name
        self.envelope = envelope  # one event envelope -> its bytes
        self.batch = batch  # consecutive encoded events -> one frame
        self._last_event: Event | None = None
        self._last_bytes = b""

    def of_event(self, event: Event) -> bytes:
        if event is not self._last_event:
            self._last_bytes = self.envelope(event.envelope())
            self._last_event = event
        return self._last_bytes


def sse_envelope(envelope: dict[str, Any]) -> bytes:
    """One Server-Sent Event holding the envelope as JSON; a thread's event carries its
    seq as the event id, so a reconnecting ``EventSource`` resumes after it
    (``Last-Event-ID``)."""
    data = b"data: " + orjson.dumps(envelope) + b"\n\n"
    seq = envelope.get("seq")
    if envelope.get("thread_id") is not None and isinstance(seq, int):
        return b"id: %d\n" % seq + data
    return data


def _joined(parts: list[bytes], count: int) -> bytes:
    return b"".join(parts)


MSGPACK = Encoding("msgpack", packb, encode_batch)
SSE = Encoding("sse", sse_envelope, _joined)
