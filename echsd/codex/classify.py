"""Pure mapping from upstream failures (HTTP answers, error events) to ``ModelError``s.

Kept apart from the IO so every branch is unit-testable. Error codes follow what the
OpenAI API and the ChatGPT Codex backend send (openai/codex ``codex-api/src/sse``):
``context_length_exceeded``, ``insufficient_quota``, ``usage_limit_reached``,
``usage_not_included``, ``rate_limit_exceeded`` (its message says "try again in N s").
"""

from __future__ import annotations

import email.utils
import re
import time
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

_CONTEXT_MESSAGE = re.compile(
    r"context[ _-]?(length|window)|maximum context|too many tokens|prompt is too long", re.I
)
_TRY_AGAIN = re.compile(r"try again in\s*(\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|secs?|seconds?)\b", re.I)


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


def error_from_code(code: str | None, message: str | None, *, default: type[ModelError] = ResponseFailed) -> ModelError:
    """Map an error event's / failed response's ``code`` to a typed error."""
    text = message or code or "the upstream reported an error"
    if code in CONTEXT_CODES:
        return ContextWindowExceeded(text, upstream_code=code)
    if code in USAGE_CODES:
        return UsageLimitReached(text, upstream_code=code)
    if code in RATE_LIMIT_CODES:
        return RateLimited(text, upstream_code=code, retry_after=parse_try_again(message))
    return default(text, upstream_code=code, retryable=code in TRANSIENT_CODES)


def error_fields(body: bytes) -> tuple[str | None, str | None]:
    """(code, message) from an error body: OpenAI ``{"error": {...}}``, ``{"detail": ...}`` or text."""
    try:
        data: Any = orjson.loads(body)
    except orjson.JSONDecodeError:
        text = body.decode("utf-8", "replace").strip()
        return None, (text[:300] or None)
    if isinstance(data, dict):
        error = data.get("error", data)
        if isinstance(error, dict):
            code = error.get("code") or error.get("type")
            message = error.get("message") or error.get("detail")
            return (code if isinstance(code, str) else None), (str(message) if message else None)
        if isinstance(error, str):
            return None, error
    return None, None


def error_from_http(status: int, headers: Mapping[str, str], body: bytes, *, url: str) -> ModelError:
    """Map a non-2xx answer to a typed error (headers keyed in lower case)."""
    code, detail = error_fields(body)
    message = f"{url} answered HTTP {status}" + (f": {detail}" if detail else "")
    if status in (400, 413) and (code in CONTEXT_CODES or _CONTEXT_MESSAGE.search(detail or "")):
        return ContextWindowExceeded(message, status=status, upstream_code=code)
    if status in (401, 403):
        return AuthFailed(message, status=status, upstream_code=code)
    if status == 429:
        if code in USAGE_CODES:
            return UsageLimitReached(message, status=status, upstream_code=code)
        retry_after = parse_retry_after(headers)
        if retry_after is None:
            retry_after = parse_try_again(detail)
        return RateLimited(message, status=status, upstream_code=code, retry_after=retry_after)
    if status >= 500:
        return UpstreamUnavailable(
            message, status=status, upstream_code=code, retry_after=parse_retry_after(headers), retryable=True
        )
    return BadModelRequest(message, status=status, upstream_code=code)
