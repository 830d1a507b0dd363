"""Pure mapping from upstream failures (HTTP answers, error events) to ``ModelError``s.

Kept apart from the IO so every branch is unit-testable. Errors are recognised by their
``code`` *or* their ``type``: the OpenAI API names most failures by ``code``
(``context_length_exceeded``, ``insufficient_quota``, ``rate_limit_exceeded`` whose message
says "try again in N s"), while the ChatGPT Codex backend sends ``type`` alone for its plan
limits (``usage_limit_reached``, ``usage_not_included``, with ``plan_type``, ``resets_at``
and ``resets_in_seconds``). Its other refusals are ``{"detail": "..."}`` bodies.
"""

from __future__ import annotations

import email.utils
import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Mapping

import orjson

from echsd.codex.errors import (
    AuthFailed,
    BadModelRequest,
    ContextWindowExceeded,
    ModelError,
    RateLimited,
    ResponseFailed,
    UpstreamUnavailable,
    UsageLimitReached,
)

CONTEXT_CODES = frozenset({"context_length_exceeded", "context_window_exceeded"})
USAGE_CODES = frozenset({"insufficient_quota", "usage_limit_reached", "usage_not_included"})
RATE_LIMIT_CODES = frozenset({"rate_limit_exceeded"})
# Failures of the upstream itself, worth another attempt while nothing was streamed yet.
TRANSIENT_CODES = frozenset({"server_error", "server_is_overloaded", "slow_down", "internal_error"})
SUMMARY_REFUSAL = "reasoning.summary"
ENCRYPTED_CONTENT_REFUSAL = "invalid_encrypted_content"

_CONTEXT_MESSAGE = re.compile(
    r"context[ _-]?(length|window)|maximum context|too many tokens|prompt is too long", re.I
)
_TRY_AGAIN = re.compile(r"try again in\s*(\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|secs?|seconds?)\b", re.I)
_VERIFY = re.compile(r"must be verified", re.I)
_ITEM_REFUSAL = re.compile(r"encrypted content|item with id '[^']*' not found", re.I)
# An item named in a refusal: a quoted id, an id, or an abbreviated id or content ("gAAA...DQ==").
_NAMED = re.compile(
    r"(?:item with id '|for item |encrypted content (?!for item))([A-Za-z0-9+/=-]+_[A-Za-z0-9_+/=-]*|[A-Za-z0-9_+/=-]+\.{3,4}[A-Za-z0-9_+/=-]+)",
    re.I,
)


@dataclass(frozen=True)
class ErrorBody:
    """The fields of an upstream error object that decide what it means."""

    code: str | None = None
    type: str | None = None
    message: str | None = None
    param: str | None = None
    plan_type: str | None = None
    resets_at: float | None = None  # unix seconds
    resets_in_seconds: float | None = None

    @property
    def kinds(self) -> frozenset[str]:
        return frozenset(k for k in (self.code, self.type) if k)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _seconds(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str) and value.strip():
        try:
            return float(value)
        except ValueError:
            pass
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def error_object(data: Mapping[str, Any]) -> ErrorBody:
    """An ``ErrorBody`` from an error object (``{"code", "type", "message", ...}``)."""
    message = data.get("message") or data.get("detail")
    return ErrorBody(
        code=_text(data.get("code")),
        type=_text(data.get("type")),
        message=str(message) if message else None,
        param=_text(data.get("param")),
        plan_type=_text(data.get("plan_type")),
        resets_at=_seconds(data.get("resets_at")),
        resets_in_seconds=_seconds(data.get("resets_in_seconds")),
    )


def parse_error_body(body: bytes) -> ErrorBody:
    """An error answer: OpenAI ``{"error": {...}}``, the backend's ``{"detail": ...}``, or text."""
    try:
        data: Any = orjson.loads(body)
    except orjson.JSONDecodeError:
        text = body.decode("utf-8", "replace").strip()
        return ErrorBody(message=text[:300] or None)
    if isinstance(data, dict):
        error = data.get("error", data)
        if isinstance(error, dict):
            return error_object(error)
        if isinstance(error, str):
            return ErrorBody(message=error)
    return ErrorBody()


def parse_try_again(message: str | None) -> float | None:
    """Seconds from messages like "Please try again in 1.5s" / "try again in 20ms"."""
    match = _TRY_AGAIN.search(message or "")
    if match is None:
        return None
    value = float(match.group(1))
    return value / 1000.0 if match.group(2).lower().startswith("m") else value


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date), in seconds."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = (headers.get("retry-after") or "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _duration(seconds: float) -> str:
    minutes = max(1, round(seconds / 60))
    days, rest = divmod(minutes, 24 * 60)
    hours, minutes = divmod(rest, 60)
    parts = [f"{days} d"] if days else []
    parts += [f"{hours} h"] if hours else []
    parts += [f"{minutes} min"] if minutes and not days else []
    return " ".join(parts)


def usage_limit(fields: ErrorBody, text: str, *, status: int | None = None, now: float | None = None) -> UsageLimitReached:
    """``UsageLimitReached`` whose message says when the limit resets, as the upstream told."""
    now = time.time() if now is None else now
    resets_at, resets_in = fields.resets_at, fields.resets_in_seconds
    if resets_at is None and resets_in is not None:
        resets_at = now + resets_in
    if resets_in is None and resets_at is not None:
        resets_in = max(0.0, resets_at - now)
    message = text + (f" (plan {fields.plan_type})" if fields.plan_type else "")
    if resets_at is not None and resets_in is not None:
        when = datetime.fromtimestamp(resets_at, UTC).strftime("%Y-%m-%d %H:%M UTC")
        message += f"; resets in {_duration(resets_in)}, at {when}"
    return UsageLimitReached(
        message,
        status=status,
        upstream_code=fields.code,
        upstream_type=fields.type,
        resets_at=resets_at,
        resets_in_seconds=resets_in,
        plan_type=fields.plan_type,
    )


def error_from_event(data: Mapping[str, Any], *, fallback: str, default: type[ModelError] = ResponseFailed) -> ModelError:
    """An ``error`` event's / failed response's error object as a typed error."""
    fields = error_object(data)
    text = fields.message or fields.code or fields.type or fallback
    kinds = fields.kinds
    context = {"upstream_code": fields.code, "upstream_type": fields.type, "param": fields.param}
    if kinds & CONTEXT_CODES:
        return ContextWindowExceeded(text, **context)
    if kinds & USAGE_CODES:
        return usage_limit(fields, text)
    if kinds & RATE_LIMIT_CODES:
        return RateLimited(text, retry_after=parse_try_again(fields.message), **context)
    return default(text, retryable=bool(kinds & TRANSIENT_CODES), **context)


def error_from_http(status: int, headers: Mapping[str, str], body: bytes, *, url: str) -> ModelError:
    """Map a non-2xx answer to a typed error (headers keyed in lower case)."""
    fields = parse_error_body(body)
    detail = fields.message
    message = f"{url} answered HTTP {status}" + (f": {detail}" if detail else "")
    kinds = fields.kinds
    context = {"status": status, "upstream_code": fields.code, "upstream_type": fields.type, "param": fields.param}
    if status in (400, 413) and (kinds & CONTEXT_CODES or _CONTEXT_MESSAGE.search(detail or "")):
        return ContextWindowExceeded(message, **context)
    if kinds & USAGE_CODES:
        return usage_limit(fields, message, status=status)
    if status in (401, 403):
        return AuthFailed(message, **context)
    if status == 429:
        retry_after = parse_retry_after(headers)
        if retry_after is None:
            retry_after = parse_try_again(detail)
        return RateLimited(message, retry_after=retry_after, **context)
    if status >= 500:
        return UpstreamUnavailable(message, retry_after=parse_retry_after(headers), retryable=True, **context)
    return BadModelRequest(message, **context)


def is_summary_refusal(error: ModelError) -> bool:
    """400 "Your organization must be verified to generate reasoning summaries"."""
    return isinstance(error, BadModelRequest) and (
        error.param == SUMMARY_REFUSAL or bool(_VERIFY.search(error.message) and "summar" in error.message)
    )


def refused_reasoning(error: ModelError, items: list[Any]) -> frozenset[str] | None:
    """The keys (``shape.item_key``) of the reasoning items in ``items`` a 400 refuses, or
    ``{"*"}`` for all of them; None when the refusal is not about reasoning items.

    The endpoints name the item by its id ("Item with id 'rs_1' not found ..." when its
    content is missing, "The encrypted content for item rs_12....ab34 could not be
    verified") or by its abbreviated content ("The encrypted content gAAA...DQ== could not
    be verified", ``invalid_encrypted_content``: another model's or account's reasoning).
    """
    if not isinstance(error, BadModelRequest):
        return None
    about_items = error.upstream_code == ENCRYPTED_CONTENT_REFUSAL or bool(_ITEM_REFUSAL.search(error.message))
    reasoning = [item for item in items if isinstance(item, dict) and item.get("type") == "reasoning"]
    if not about_items or not reasoning:
        return None
    named = [_abbreviation(token) for token in _NAMED.findall(error.message)]
    if not named:
        return frozenset({"*"})
    hits = frozenset(
        str(value)
        for item in reasoning
        for value in (item.get("id"), item.get("encrypted_content"))
        if isinstance(value, str) and value and any(value.startswith(head) and value.endswith(tail) for head, tail in named)
    )
    if hits:
        return frozenset(str(item.get("id") or item.get("encrypted_content") or "") for item in reasoning if {item.get("id"), item.get("encrypted_content")} & hits)
    named_other = any(token.startswith(("msg_", "fc_", "cmp_", "ctc_", "fco_")) for token, _ in named)
    return None if named_other else frozenset({"*"})


def _abbreviation(token: str) -> tuple[str, str]:
    """("gAAA", "DQ==") from "gAAA...DQ=="; (id, "") for a whole id."""
    head, dots, tail = token.partition("...")
    return (head, tail.lstrip(".")) if dots else (token, "")
