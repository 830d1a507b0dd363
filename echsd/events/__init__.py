"""Events: the record (``record.Event``) and the event types (one class each, ``base.event``).

``EVENT_TYPES`` is the one catalogue of event types (name -> class: its data fields, whether
it is stored, its docs), in the order ``thread``, ``turn`` and ``streams`` define them; the
protocol documentation is generated from it, and a test checks that every type has an
emitter. ``DELTA_EVENTS`` names the streamed-text types (folded by retention).
"""

from echsd.events import thread, turn  # isort: skip -- the catalogue's order: a thread's, a turn's,
from echsd.events import streams  # isort: skip -- then the streams'
from echsd.events.base import EVENT_TYPES, EventData, doc, event
from echsd.events.record import BoardStream, Event, StreamKey, gap_envelope
from echsd.events.streams import *  # noqa: F403 -- every event type by its class name
from echsd.events.thread import *  # noqa: F403
from echsd.events.turn import *  # noqa: F403

DELTA_EVENTS = frozenset(name for name, kind in EVENT_TYPES.items() if kind.streamed)

__all__ = [
    "DELTA_EVENTS",
    "EVENT_TYPES",
    "BoardStream",
    "Event",
    "EventData",
    "StreamKey",
    "doc",
    "event",
    "gap_envelope",
    "streams",
    "thread",
    "turn",
    *(kind.__name__ for kind in EVENT_TYPES.values()),
]
