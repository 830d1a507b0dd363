"""Typed stream events, one small immutable class each (the h11 ``_events`` pattern).

The reducer turns the Responses API's SSE events into these; the thread runtime consumes
them in order. Deltas are for live display only: ``ItemDone`` carries each finished item
in the exact shape it must be sent back as input next time, and ``Completed.output`` lists
all of them in order.

Besides the model's output (``OUTPUT_EVENTS``) the client reports what happens on the way,
for the thread to show and remember; none of these is output:

- ``Retrying``: a retry is about to wait ``delay_s`` (-> ``turn.retry``);
- ``RateLimitsUpdated``: the account's limits from headers or ``codex.rate_limits``
  (-> ``account.rate_limits``);
- ``SummaryUnavailable``: the organisation may not have reasoning summaries; the request
  is being resent without one (the thread should send ``reasoning_summary=None`` from now on);
- ``ReasoningDropped``: the upstream refused reasoning items made by another model; the
  request is being resent without reasoning items (the thread may drop them from history).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple, Union

from echsd.codex.ratelimits import RateLimits


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0


# The deltas are named tuples: one is made per SSE event of a streaming reply, and a tuple
# costs a fraction of a frozen dataclass. Compare them by type as well as fields.
class TextDelta(NamedTuple):
    item_id: str
    output_index: int
    delta: str


class ReasoningDelta(NamedTuple):
    """Reasoning *summary* text (``response.reasoning_summary_text.delta``)."""

    item_id: str
    output_index: int
    delta: str


class ArgumentsDelta(NamedTuple):
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


@dataclass(frozen=True, slots=True)
class Retrying:
    """Emitted before the client waits for another attempt (``attempt`` counts from 1)."""

    attempt: int
    max_retries: int
    delay_s: float
    reason: str  # one line: what failed
    code: str  # the ModelError code of the failure


@dataclass(frozen=True, slots=True)
class RateLimitsUpdated:
    limits: tuple[RateLimits, ...]


@dataclass(frozen=True, slots=True)
class SummaryUnavailable:
    message: str  # the upstream's refusal


@dataclass(frozen=True, slots=True)
class ReasoningDropped:
    removed: int  # reasoning items left out of the resent request
    message: str  # the upstream's refusal
    keys: frozenset[str] = frozenset({"*"})  # the items' ``shape.item_key``s ({"*"}: every reasoning item)


OUTPUT_EVENTS = (TextDelta, ReasoningDelta, ArgumentsDelta, ItemAdded, ItemDone, Completed)
StreamEvent = Union[
    TextDelta,
    ReasoningDelta,
    ArgumentsDelta,
    ItemAdded,
    ItemDone,
    Completed,
    Retrying,
    RateLimitsUpdated,
    SummaryUnavailable,
    ReasoningDropped,
]
