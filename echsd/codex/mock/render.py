"""Render one scripted step as Responses API SSE events (pure, apart from random ids).

Event shapes follow the OpenAI Responses streaming reference: ``response.created``,
``response.in_progress``, then per output item ``output_item.added``, its part events and
deltas, ``output_item.done``, and finally ``response.completed`` with usage. A step with
``rate_limits`` also gets the ChatGPT backend's ``x-codex-*`` headers and its
``codex.rate_limits`` event (right after ``response.created``). Delta events
are built from pre-encoded byte templates: the benchmark path pushes tens of thousands
of them per second, so no dict is built or serialised per delta.
"""

from __future__ import annotations

import itertools
import re
import secrets
import time
from typing import Any, Iterable, Iterator

import orjson

from echsd.codex.mock.checks import encrypted_reasoning
from echsd.codex.mock.script import Call, Fault, LimitWindow, Step

EVENT, DELTA, PREAMBLE_END = 0, 1, 2  # kinds of the pieces ``Renderer.events`` yields
MALFORMED_EVENT = b'event: response.output_text.delta\ndata: {"type": "response.output_text.delta", this is not json\n\n'
USAGE_LIMIT_MESSAGE = "The usage limit has been reached"
_WORDS = re.compile(r"\S+\s*|\s+")


def split_words(text: str) -> list[str]:
    """Word-sized deltas (each word with the whitespace after it); they join back to ``text``."""
    return _WORDS.findall(text)


def split_even(text: str, parts: int) -> list[str]:
    parts = max(1, min(parts, len(text)))
    return [text[i * len(text) // parts : (i + 1) * len(text) // parts] for i in range(parts)]


def _stamps(count: int) -> Iterator[str]:
    """Deltas that say when they were rendered, i.e. written (benchmarks measure latency from them)."""
    for _ in range(count):
        yield f"{time.time():.6f} "


def _kept(pieces: Iterable[str], into: list[str]) -> Iterator[str]:
    for piece in pieces:
        into.append(piece)
        yield piece


def _new_id(prefix: str) -> str:
    return prefix + secrets.token_hex(12)


class Renderer:
    def __init__(self, step: Step, *, model: str, input_tokens: int) -> None:
        self.step = step
        self.model = model
        self.input_tokens = input_tokens
        self.response_id = _new_id("resp_")
        self.created_at = int(time.time())
        self.seq = 0
        self.output: list[dict] = []  # items finished so far
        self._output_chars = 0

    def events(self) -> Iterator[tuple[int, bytes]]:
        """(kind, bytes) pieces in order; ``PREAMBLE_END`` (empty) marks where output starts."""
        step = self.step
        yield EVENT, self._event("response.created", {"response": self._response("in_progress")})
        if step.rate_limits is not None:
            yield EVENT, self._rate_limits_event()
        yield EVENT, self._event("response.in_progress", {"response": self._response("in_progress")})
        yield PREAMBLE_END, b""
        index = 0
        if step.reasoning is not None:
            yield from self._reasoning(index, step.reasoning)
            index += 1
        if step.repeat is not None:
            chunk, count = step.repeat
            yield from self._message(index, _stamps(count) if step.stamp_time else itertools.repeat(chunk, count))
            index += 1
        elif step.text is not None:
            yield from self._message(index, split_even(step.text, step.deltas) if step.deltas else split_words(step.text))
            index += 1
        for call in step.calls:
            yield from self._call(index, call)
            index += 1
        completed = self._response("completed", output=self.output, usage=self._usage())
        yield EVENT, self._event("response.completed", {"response": completed})

    def headers(self) -> list[tuple[str, str]]:
        """Response headers: the request id, and the step's rate limits as ``x-codex-*``."""
        headers = [("x-request-id", self.response_id)]
        limits = self.step.rate_limits
        if limits is None:
            return headers
        for which, window in (("primary", limits.primary), ("secondary", limits.secondary)):
            if window is not None:
                headers.append((f"x-codex-{which}-used-percent", f"{window.used_percent:g}"))
                if window.window_minutes is not None:
                    headers.append((f"x-codex-{which}-window-minutes", str(window.window_minutes)))
                if window.resets_in_seconds is not None:
                    headers.append((f"x-codex-{which}-reset-at", str(self.created_at + window.resets_in_seconds)))
        if limits.credits is not None:
            has, unlimited, balance = limits.credits
            headers += [("x-codex-credits-has-credits", str(has).lower()), ("x-codex-credits-unlimited", str(unlimited).lower())]
            if balance is not None:
                headers.append(("x-codex-credits-balance", balance))
        return headers

    def _rate_limits_event(self) -> bytes:
        limits = self.step.rate_limits
        assert limits is not None

        def window(w: LimitWindow | None) -> dict[str, Any] | None:
            if w is None:
                return None
            reset_at = self.created_at + w.resets_in_seconds if w.resets_in_seconds is not None else None
            return {"used_percent": w.used_percent, "window_minutes": w.window_minutes, "reset_at": reset_at}

        payload: dict[str, Any] = {
            "plan_type": limits.plan_type,
            "rate_limits": {"primary": window(limits.primary), "secondary": window(limits.secondary)},
            "credits": None,
        }
        if limits.credits is not None:
            has, unlimited, balance = limits.credits
            payload["credits"] = {"has_credits": has, "unlimited": unlimited, "balance": balance}
        return self._event("codex.rate_limits", payload)

    def fault_event(self, fault: Fault) -> bytes:
        """The terminal event of a ``failed`` / ``incomplete`` / ``error`` / ``usage_limit`` fault."""
        if fault.kind == "failed":
            error: dict[str, Any] = {
                "code": fault.code or "server_error",
                "message": fault.message or "mock upstream: the response failed",
            }
            if fault.error_type is not None:
                error["type"] = fault.error_type
            return self._event("response.failed", {"response": self._response("failed", output=self.output, error=error)})
        if fault.kind == "incomplete":
            details = {"reason": fault.reason}
            response = self._response("incomplete", output=self.output, usage=self._usage(), incomplete_details=details)
            return self._event("response.incomplete", {"response": response})
        if fault.kind == "usage_limit":  # the ChatGPT backend's plan limit: named by "type", with its reset time
            error = {
                "type": fault.error_type or "usage_limit_reached",
                "message": fault.message or USAGE_LIMIT_MESSAGE,
                "plan_type": "plus",
                "resets_at": self.created_at + fault.resets_in_seconds,
                "resets_in_seconds": fault.resets_in_seconds,
            }
            return self._event("error", {"error": error})
        payload = {"code": fault.code or "server_error", "message": fault.message or "mock upstream: error event", "param": None}
        if fault.error_type is not None:  # "type" is the event's own: the error then comes nested
            return self._event("error", {"error": {**payload, "type": fault.error_type}})
        return self._event("error", payload)

    def _event(self, kind: str, payload: dict[str, Any]) -> bytes:
        data = orjson.dumps({"type": kind, "sequence_number": self.seq, **payload})
        self.seq += 1
        return b"event: " + kind.encode() + b"\ndata: " + data + b"\n\n"

    def _deltas(self, kind: str, fields: dict[str, Any], pieces: Iterable[str]) -> Iterator[tuple[int, bytes]]:
        head = (
            b"event: " + kind.encode() + b'\ndata: {"type":"' + kind.encode() + b'",'
            + orjson.dumps(fields)[1:-1] + b',"delta":'
        )
        for piece in pieces:
            self._output_chars += len(piece)
            yield DELTA, head + orjson.dumps(piece) + b',"sequence_number":' + str(self.seq).encode() + b"}\n\n"
            self.seq += 1

    def _done(self, index: int, item: dict) -> bytes:
        self.output.append(item)
        return self._event("response.output_item.done", {"output_index": index, "item": item})

    def _reasoning(self, index: int, text: str) -> Iterator[tuple[int, bytes]]:
        item_id = _new_id("rs_")
        where = {"item_id": item_id, "output_index": index, "summary_index": 0}
        yield EVENT, self._event("response.output_item.added", {"output_index": index, "item": {"id": item_id, "type": "reasoning", "summary": []}})
        yield EVENT, self._event("response.reasoning_summary_part.added", {**where, "part": {"type": "summary_text", "text": ""}})
        yield from self._deltas("response.reasoning_summary_text.delta", where, split_words(text))
        yield EVENT, self._event("response.reasoning_summary_text.done", {**where, "text": text})
        yield EVENT, self._event("response.reasoning_summary_part.done", {**where, "part": {"type": "summary_text", "text": text}})
        item = {
            "id": item_id,
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": text}],
            "encrypted_content": encrypted_reasoning(self.model, text),
        }
        yield EVENT, self._done(index, item)

    def _message(self, index: int, pieces: Iterable[str]) -> Iterator[tuple[int, bytes]]:
        item_id = _new_id("msg_")
        where = {"item_id": item_id, "output_index": index, "content_index": 0}
        added = {"id": item_id, "type": "message", "status": "in_progress", "content": [], "role": "assistant"}
        yield EVENT, self._event("response.output_item.added", {"output_index": index, "item": added})
        part = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
        yield EVENT, self._event("response.content_part.added", {**where, "part": part})
        sent: list[str] = []
        yield from self._deltas("response.output_text.delta", {**where, "logprobs": []}, _kept(pieces, sent))
        text = "".join(sent)
        yield EVENT, self._event("response.output_text.done", {**where, "text": text, "logprobs": []})
        part = {**part, "text": text}
        yield EVENT, self._event("response.content_part.done", {**where, "part": part})
        item = {"id": item_id, "type": "message", "status": "completed", "content": [part], "role": "assistant"}
        yield EVENT, self._done(index, item)

    def _call(self, index: int, call: Call) -> Iterator[tuple[int, bytes]]:
        if call.custom:
            yield from self._custom_call(index, call)
            return
        item_id = _new_id("fc_")
        call_id = call.call_id or _new_id("call_")
        base = {"id": item_id, "type": "function_call", "call_id": call_id, "name": call.name}
        yield EVENT, self._event("response.output_item.added", {"output_index": index, "item": {**base, "status": "in_progress", "arguments": ""}})
        where = {"item_id": item_id, "output_index": index}
        pieces = split_even(call.arguments, 3) if call.arguments else []
        yield from self._deltas("response.function_call_arguments.delta", where, pieces)
        yield EVENT, self._event("response.function_call_arguments.done", {**where, "arguments": call.arguments})
        yield EVENT, self._done(index, {**base, "status": "completed", "arguments": call.arguments})

    def _custom_call(self, index: int, call: Call) -> Iterator[tuple[int, bytes]]:
        """A freeform tool call, as the API streams one: ``custom_tool_call_input`` deltas."""
        item_id = _new_id("ctc_")
        call_id = call.call_id or _new_id("call_")
        base = {"id": item_id, "type": "custom_tool_call", "call_id": call_id, "name": call.name}
        yield EVENT, self._event("response.output_item.added", {"output_index": index, "item": {**base, "status": "in_progress", "input": ""}})
        where = {"item_id": item_id, "output_index": index}
        pieces = split_even(call.arguments, 3) if call.arguments else []
        yield from self._deltas("response.custom_tool_call_input.delta", where, pieces)
        yield EVENT, self._event("response.custom_tool_call_input.done", {**where, "input": call.arguments})
        yield EVENT, self._done(index, {**base, "status": "completed", "input": call.arguments})

    def _response(self, status: str, *, output: list[dict] | None = None, usage: dict | None = None, **extra: Any) -> dict:
        response = {
            "id": self.response_id,
            "object": "response",
            "created_at": self.created_at,
            "status": status,
            "error": None,
            "incomplete_details": None,
            "model": self.model,
            "output": list(output or []),
            "parallel_tool_calls": True,
            "store": False,
            "usage": usage,
        }
        response.update(extra)
        return response

    def _usage(self) -> dict[str, Any]:
        override = self.step.usage
        reasoning_chars = len(self.step.reasoning or "")
        input_tokens = override.get("input_tokens", self.input_tokens)
        output_tokens = override.get("output_tokens", max(1, self._output_chars // 4))
        return {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": override.get("cached_tokens", 0)},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": override.get("reasoning_tokens", reasoning_chars // 4)},
            "total_tokens": input_tokens + output_tokens,
        }
