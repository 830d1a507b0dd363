"""Mapping upstream failures to typed errors, and retry timing."""

from __future__ import annotations

import email.utils
import random

import pytest

from echsd.codex import (
    AuthFailed,
    Backoff,
    BadModelRequest,
    ContextWindowExceeded,
    RateLimited,
    UpstreamUnavailable,
    UsageLimitReached,
)
from echsd.codex.classify import error_from_http, parse_retry_after, parse_try_again


@pytest.mark.parametrize(
    ("message", "seconds"),
    [("Please try again in 1.5s.", 1.5), ("try again in 20ms", 0.02), ("Try again in 3 seconds", 3.0), ("later", None), (None, None)],
)
def test_try_again_messages(message: str | None, seconds: float | None) -> None:
    assert parse_try_again(message) == seconds


def test_retry_after_headers() -> None:
    assert parse_retry_after({"retry-after": "7"}) == 7.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "7"}) == 0.25
    now = 1_700_000_000.0
    assert parse_retry_after({"retry-after": email.utils.formatdate(now + 30, usegmt=True)}, now=now) == 30.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


def body(code: str | None, message: str) -> bytes:
    return b'{"error": {"message": "%s", "type": "x", "code": %s}}' % (
        message.encode(), (b'"%s"' % code.encode()) if code else b"null"
    )


@pytest.mark.parametrize(
    ("status", "payload", "expected", "retryable"),
    [
        (400, body("context_length_exceeded", "too long"), ContextWindowExceeded, False),
        (400, body(None, "This model's maximum context length is 128000 tokens"), ContextWindowExceeded, False),
        (400, body("invalid_value", "bad tool"), BadModelRequest, False),
        (404, b"not here", BadModelRequest, False),
        (401, body("invalid_api_key", "Incorrect API key"), AuthFailed, False),
        (403, b'{"detail": "forbidden"}', AuthFailed, False),
        (429, body("rate_limit_exceeded", "slow down"), RateLimited, True),
        (429, body("insufficient_quota", "pay up"), UsageLimitReached, False),
        (429, b'{"error": {"type": "usage_limit_reached", "message": "plan limit"}}', UsageLimitReached, False),
        (500, b"boom", UpstreamUnavailable, True),
        (503, b"", UpstreamUnavailable, True),
    ],
)
def test_http_errors(status: int, payload: bytes, expected: type, retryable: bool) -> None:
    error = error_from_http(status, {}, payload, url="http://x/v1/responses")
    assert type(error) is expected
    assert error.retryable is retryable and error.status == status
    assert error.message.startswith("http://x/v1/responses answered HTTP")


def test_rate_limit_delay_from_header_or_message() -> None:
    assert error_from_http(429, {"retry-after": "4"}, b"", url="u").retry_after == 4.0
    assert error_from_http(429, {}, body("rate_limit_exceeded", "Please try again in 1.5s"), url="u").retry_after == 1.5


def test_backoff_grows_with_jitter_and_honours_hints() -> None:
    backoff = Backoff(base_s=1.0, factor=2.0, max_s=5.0, jitter=0.25, rng=random.Random(1))
    for attempt, nominal in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 5.0), (9, 5.0)]:
        assert 0.75 * nominal <= backoff.delay(attempt) <= 1.25 * nominal
    assert backoff.delay(1, hint=12.0) == 12.0
    assert backoff.delay(1, hint=10_000.0) == backoff.max_hint_s
