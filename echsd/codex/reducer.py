"""Sans-IO reducer: decoded SSE events in, typed stream events out.

Fed one ``SseEvent`` at a time, it returns the typed event to hand to the caller (or
None), raises a ``ModelError`` for ``response.failed`` / ``response.incomplete`` /
``error`` and for a known event of the wrong shape (``StreamBroken``, never another
exception type), and ignores event types it does not know. A ``data:`` line that is not
a JSON object is skipped with a warning, as Codex does (``skipped`` counts them). ``finish()`` at end of stream raises
``StreamBroken`` unless ``response.completed`` was seen. Event shapes follow the OpenAI
Responses streaming reference; the event kind is the JSON ``type`` (what the API and
openai/codex rely on), falling back to the SSE ``event:`` name.
"""

from __future__ import annotations

from typing import Any, Callable

import orjson

import echsd.codex.ratelimits as ratelimits
from echsd.codex.classify import error_from_event
from echsd.codex.errors import ResponseIncomplete, StreamBroken
from echsd.codex.events import (
    ArgumentsDelta,
    Completed,
    ItemAdded,
    ItemDone,
    RateLimitsUpdated,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    Usage,
)
from echsd.codex.sse import SseEvent
from echsd.logs import get_logger

log = get_logger(__name__)
_new_text_delta = tuple.__new__  # a TextDelta without the Python-level __new__ of a named tuple

# Output item types whose "id"/"status" must not be resent with store=false (as openai/codex does).
_STRIP_ID = frozenset({"message", "reasoning", "function_call", "custom_tool_call", "local_shell_call", "web_search_call"})
_STRIP_STATUS = frozenset({"message", "reasoning", "function_call"})


def as_input_item(item: dict) -> dict:
    """An output item in the shape it is sent back as input (ids and status dropped)."""
    kind = item.get("type")
    if not isinstance(kind, str) or kind not in _STRIP_ID:
        return item
    out = {k: v for k, v in item.items() if k != "id" and not (k == "status" and kind in _STRIP_STATUS)}
    content = out.get("content")
    if kind == "message" and isinstance(content, list):
        out["content"] = [_input_part(part) for part in content]
    return out


def _input_part(part: Any) -> Any:
    if isinstance(part, dict) and part.get("type") == "output_text":
        clean = {"type": "output_text", "text": part.get("text", "")}
        if part.get("annotations"):
            clean["annotations"] = part["annotations"]
        return clean
    return part


class ResponseReducer:
    """State of one streamed response."""

    def __init__(self) -> None:
        self.completed: Completed | None = None
        self._response_id: str | None = None
        self._done: dict[int, dict] = {}
        self._arguments: dict[str, list[str]] = {}
        self.skipped = 0  # data lines that were not JSON objects

    def feed(self, sse: SseEvent) -> StreamEvent | None:
        if self.completed is not None:
            return None
        if len(sse.data) > _UNPARSED_FROM and sse.data.startswith(_UNUSED_PREFIXES):
            return None  # a long event we would drop after parsing it (it repeats what we have)
        try:
            event = orjson.loads(sse.data)  # the one parse of the event (whitespace around is fine)
        except orjson.JSONDecodeError:
            event = None
        if type(event) is not dict:
            return self._skip(sse)
        kind = event.get("type") or sse.event
        if kind == "response.output_text.delta":  # the hot path: most events are text deltas
            item_id, index, delta = event.get("item_id", ""), event.get("output_index", 0), event.get("delta", "")
            if type(item_id) is str and type(index) is int and type(delta) is str:
                return _new_text_delta(TextDelta, (item_id, index, delta))
        handler = _HANDLERS.get(kind) if isinstance(kind, str) else None
        return handler(self, event) if handler is not None else None

    def _skip(self, sse: SseEvent) -> None:
        data = sse.data.strip()
        if data != b"[DONE]":
            self.skipped += 1
            log.warning("skipped an SSE data line that is not a JSON object", sse_event=sse.event, data=_preview(data))

    def finish(self) -> Completed:
        if self.completed is None:
            raise StreamBroken("the stream ended before response.completed", retryable=True)
        return self.completed

    @property
    def output(self) -> list[dict]:
        return [self._done[index] for index in sorted(self._done)]

    def _created(self, event: dict) -> None:
        response = event.get("response")
        if isinstance(response, dict) and isinstance(response.get("id"), str):
            self._response_id = response["id"]
        return None

    def _item_added(self, event: dict) -> ItemAdded:
        return ItemAdded(_int(event, "output_index"), _dict(event, "item"))

    def _text_delta(self, event: dict) -> TextDelta:
        return TextDelta(_str(event, "item_id"), _int(event, "output_index"), _str(event, "delta"))

    def _reasoning_delta(self, event: dict) -> ReasoningDelta:
        return ReasoningDelta(_str(event, "item_id"), _int(event, "output_index"), _str(event, "delta"))

    def _arguments_delta(self, event: dict) -> ArgumentsDelta:
        delta = ArgumentsDelta(_str(event, "item_id"), _int(event, "output_index"), _str(event, "delta"))
        self._arguments.setdefault(delta.item_id, []).append(delta.delta)
        return delta

    def _item_done(self, event: dict) -> ItemDone:
        index = _int(event, "output_index")
        raw = _dict(event, "item")
        raw_id = raw.get("id")
        item_id = raw_id if isinstance(raw_id, str) else ""
        item = as_input_item(raw)
        if item.get("type") == "function_call" and not item.get("arguments") and item_id in self._arguments:
            item["arguments"] = "".join(self._arguments[item_id])
        self._done[index] = item
        return ItemDone(index, item, item_id)

    def _completed(self, event: dict) -> Completed:
        response = _dict(event, "response")
        response_id = response.get("id") if isinstance(response.get("id"), str) else self._response_id
        output = self.output
        if not output and isinstance(response.get("output"), list):
            output = [as_input_item(item) for item in response["output"] if isinstance(item, dict)]
        self.completed = Completed(response_id, _usage(response.get("usage")), output)
        return self.completed

    def _failed(self, event: dict) -> None:
        response = _dict(event, "response")
        error = response.get("error")
        raise error_from_event(error if isinstance(error, dict) else {}, fallback="the upstream reported response.failed")

    def _incomplete(self, event: dict) -> None:
        response = _dict(event, "response")
        details = response.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        reason = reason if isinstance(reason, str) else None
        raise ResponseIncomplete(f"the response is incomplete: {reason or 'no reason given'}", reason=reason, output=self.output)

    def _error(self, event: dict) -> None:
        nested = event.get("error")
        payload = nested if isinstance(nested, dict) else {k: v for k, v in event.items() if k != "type"}
        raise error_from_event(payload, fallback="the upstream sent an error event")

    def _rate_limits(self, event: dict) -> RateLimitsUpdated | None:
        limits = ratelimits.from_event(event)
        return RateLimitsUpdated((limits,)) if limits is not None else None


_HANDLERS: dict[str, Callable[[ResponseReducer, dict], Any]] = {
    "response.created": ResponseReducer._created,
    "response.in_progress": ResponseReducer._created,
    "response.output_item.added": ResponseReducer._item_added,
    "response.output_text.delta": ResponseReducer._text_delta,
    "response.reasoning_summary_text.delta": ResponseReducer._reasoning_delta,
    "response.function_call_arguments.delta": ResponseReducer._arguments_delta,
    "response.output_item.done": ResponseReducer._item_done,
    "response.completed": ResponseReducer._completed,
    "response.failed": ResponseReducer._failed,
    "response.incomplete": ResponseReducer._incomplete,
    "error": ResponseReducer._error,
    "codex.rate_limits": ResponseReducer._rate_limits,
}


# Events the reducer has no use for that may be long (each repeats the text or arguments its
# deltas carried, and output_item.done carries it again): past ``_UNPARSED_FROM`` bytes, one
# whose JSON opens with such a ``type`` (as the API writes it: ``type`` first) is not parsed.
# Parsing megabytes holds the event loop; anything that does not open so is parsed as usual.
_UNPARSED_FROM = 1 << 16
_UNUSED_KINDS = (
    "response.function_call_arguments.done",
    "response.custom_tool_call_input.delta",
    "response.custom_tool_call_input.done",
    "response.output_text.done",
    "response.content_part.done",
    "response.reasoning_summary_text.done",
    "response.reasoning_summary_part.done",
    "response.reasoning_text.delta",
    "response.reasoning_text.done",
)
_UNUSED_PREFIXES = tuple(b'{"type":"' + kind.encode() + b'"' for kind in _UNUSED_KINDS)


def _preview(data: bytes) -> str:
    text = data[:80].decode("utf-8", "replace")
    return repr(text) + ("..." if len(data) > 80 else "")


def _malformed(event: dict, field: str, expected: str) -> StreamBroken:
    return StreamBroken(f"malformed {event.get('type')} event from upstream: {field!r} is not {expected}")


def _int(event: dict, field: str) -> int:
    value = event.get(field, 0)
    if type(value) is not int:
        raise _malformed(event, field, "an integer")
    return value


def _str(event: dict, field: str) -> str:
    value = event.get(field, "")
    if type(value) is not str:
        raise _malformed(event, field, "a string")
    return value


def _dict(event: dict, field: str) -> dict:
    value = event.get(field)
    if not isinstance(value, dict):
        raise _malformed(event, field, "an object")
    return value


def _count(value: Any, field: str) -> int:
    number = value.get(field, 0) if isinstance(value, dict) else 0
    return number if type(number) is int and number >= 0 else 0


def _usage(usage: Any) -> Usage:
    if not isinstance(usage, dict):
        return Usage()
    return Usage(
        input_tokens=_count(usage, "input_tokens"),
        cached_tokens=_count(usage.get("input_tokens_details"), "cached_tokens"),
        output_tokens=_count(usage, "output_tokens"),
        reasoning_tokens=_count(usage.get("output_tokens_details"), "reasoning_tokens"),
    )
