"""Typed stream events, one small immutable class each (the h11 ``_events`` pattern).

The reducer turns the Responses API's SSE events into these; the thread runtime consumes
them in order. Deltas are for live display only: ``ItemDone`` carries each finished item
in the exact shape it must be sent back as input next time, and ``Completed.output`` lists
all of them in order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0


@dataclass(frozen=True, slots=True)
class TextDelta:
    item_id: str
    output_index: int
    delta: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """Reasoning *summary* text (``response.reasoning_summary_text.delta``)."""

    item_id: str
    output_index: int
    delta: str


@dataclass(frozen=True, slots=True)
class ArgumentsDelta:
    """A piece of a function call's JSON arguments string."""

    item_id: str
    output_index: int
    delta: str


@dataclass(frozen=True, slots=True)
class ItemAdded:
    output_index: int
    item: dict


@dataclass(frozen=True, slots=True)
class ItemDone:
    """A finished output item, ready to be appended to history and resent as input.

    ``item_id`` is the upstream's id of the item (the one deltas carry); it is removed from
    ``item`` itself because with ``store: false`` the upstream rejects ids it never stored.
    """

    output_index: int
    item: dict
    item_id: str = ""


@dataclass(frozen=True, slots=True)
class Completed:
    response_id: str | None
    usage: Usage = field(default_factory=Usage)
    output: list[dict] = field(default_factory=list)


StreamEvent = Union[TextDelta, ReasoningDelta, ArgumentsDelta, ItemAdded, ItemDone, Completed]
