"""What an event type is: one class per type, its name, its data fields, stored or not, its docs.

An event's ``data`` travels as a map (stored as JSON, sent as MessagePack, relayed between
nodes); its type is one class here (``@event``) that says which fields the map has and what
each means, whether the type is stored in the thread's log, and what it is for. From these
classes come ``docs/protocol.md``'s table and the emitter test. Emitters name the class
(``fx.emit(TurnStarted, {"turn_id": ..., "input_ids": ...})``; a test checks each map's keys
against the class); consumers read fields (``TurnStarted.of(data).turn_id``), not keys by
string. Building the map stays a plain dict literal: the per-delta path allocates nothing
more than before.
"""

from __future__ import annotations

from typing import Any, ClassVar, Mapping, TypeVar

E = TypeVar("E", bound="EventData")

EVENT_TYPES: dict[str, type[EventData]] = {}  # every event type, by name, in definition order


def doc(text: str) -> Any:
    """A data field's description (the class attribute's default, read by ``@event``)."""
    return text


class EventData:
    """A typed view of one event's ``data``: each declared field an attribute (None when the
    map lacks it, e.g. an optional field); ``raw`` is the map itself (to hand on whole)."""

    __slots__ = ("raw",)
    raw: Mapping[str, Any]

    type_name: ClassVar[str]  # e.g. "turn.delta" (not ``name``: tool.started has a field so called)
    description: ClassVar[str]
    fields: ClassVar[dict[str, str]]  # field -> what it holds
    stored: ClassVar[bool]  # False: synthesised for one client, never in the log
    streamed: ClassVar[bool]  # streamed text: folded by retention, counted by the log

    @classmethod
    def of(cls: type[E], data: Mapping[str, Any]) -> E:
        view = object.__new__(cls)
        object.__setattr__(view, "raw", data)
        for key in cls.fields:
            object.__setattr__(view, key, data.get(key))
        return view

    def __repr__(self) -> str:
        values = ", ".join(f"{key}={getattr(self, key)!r}" for key in self.fields)
        return f"{type(self).__name__}({values})"


def event(name: str, *, stored: bool = True, streamed: bool = False) -> Any:
    """Make a class an event type: its annotated attributes (with ``doc(...)`` values) are
    the data fields, in order; its docstring is the description."""

    def make(cls: type[E]) -> type[E]:
        if name in EVENT_TYPES:
            raise ValueError(f"event type {name!r} is defined twice")
        fields = {key: str(cls.__dict__[key]) for key in cls.__dict__.get("__annotations__", {})}
        clashes = sorted(set(fields) & {*EventData.__annotations__, "raw"})
        if clashes:
            raise ValueError(f"{name}: the field(s) {', '.join(clashes)} would hide the type's own description")
        namespace = {key: value for key, value in cls.__dict__.items() if key not in fields and key not in ("__dict__", "__weakref__")}
        namespace["__slots__"] = tuple(fields)
        made = type(cls.__name__, cls.__bases__, namespace)
        made.type_name = name
        made.description = " ".join((cls.__doc__ or "").split())
        made.fields = fields
        made.stored = stored
        made.streamed = streamed
        EVENT_TYPES[name] = made
        return made

    return make
