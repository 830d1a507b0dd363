"""Mapping upstream failures to typed errors, and retry timing."""

from __future__ import annotations

import email.utils
import random
from datetime import UTC, datetime

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
from echsd.codex.classify import (
    ErrorBody,
    error_from_event,
    error_from_http,
    error_object,
    refused_reasoning,
    is_summary_refusal,
    parse_retry_after,
    parse_try_again,
    usage_limit,
)


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


def test_error_type_classifies_when_code_is_absent() -> None:
    usage = (
        b'{"error": {"type": "usage_limit_reached", "message": "The usage limit has been reached",'
        b' "plan_type": "plus", "resets_at": 1800003600, "resets_in_seconds": 3600}}'
    )
    error = error_from_http(429, {}, usage, url="u")
    assert isinstance(error, UsageLimitReached) and error.upstream_type == "usage_limit_reached" and error.upstream_code is None
    assert (error.resets_at, error.resets_in_seconds, error.plan_type) == (1_800_003_600, 3600, "plus")
    assert "(plan plus); resets in 1 h, at 2027-01-15 09:00 UTC" in error.message
    not_included = error_from_http(400, {}, b'{"error": {"type": "usage_not_included", "message": "upgrade"}}', url="u")
    assert isinstance(not_included, UsageLimitReached)
    context = error_from_event({"type": "context_length_exceeded", "message": "long"}, fallback="x")
    assert isinstance(context, ContextWindowExceeded) and context.upstream_type == "context_length_exceeded"


def test_usage_limit_reset_times_are_completed_from_either_field() -> None:
    now = 1_800_000_000.0
    from_delay = usage_limit(ErrorBody(type="usage_limit_reached", resets_in_seconds=90), "limit", now=now)
    assert from_delay.resets_at == now + 90 and "resets in 2 min" in from_delay.message
    from_time = usage_limit(ErrorBody(type="usage_limit_reached", resets_at=now + 2 * 86400 + 3600), "limit", now=now)
    assert from_time.resets_in_seconds == 2 * 86400 + 3600 and "resets in 2 d 1 h" in from_time.message
    iso = error_object({"type": "usage_limit_reached", "resets_at": "2027-01-15T08:00:00Z"})
    assert iso.resets_at == datetime(2027, 1, 15, 8, tzinfo=UTC).timestamp()
    assert usage_limit(ErrorBody(type="usage_limit_reached"), "limit", now=now).message == "limit"


def test_refusals_the_client_corrects() -> None:
    summary = error_from_http(400, {}, (
        b'{"error": {"message": "Your organization must be verified to generate reasoning summaries.",'
        b' "type": "invalid_request_error", "param": "reasoning.summary", "code": "unsupported_value"}}'
    ), url="u")
    mine, theirs, kept = ({"type": "reasoning", "encrypted_content": content} for content in ("gAAAmineDQ==", "gAAAtheirsXY==", "gAAAx"))
    sent = [mine, theirs, {"type": "message", "role": "user", "content": []}]
    assert is_summary_refusal(summary) and summary.param == "reasoning.summary" and refused_reasoning(summary, sent) is None
    encrypted = error_from_http(400, {}, (
        b'{"error": {"message": "The encrypted content gAAA...DQ== could not be verified.",'
        b' "type": "invalid_request_error", "param": null, "code": "invalid_encrypted_content"}}'
    ), url="u")
    assert refused_reasoning(encrypted, sent) == {"gAAAmineDQ=="} and not is_summary_refusal(encrypted)  # the one it names
    assert refused_reasoning(encrypted, [theirs, kept]) == {"*"}  # names none sent: all of them go
    assert refused_reasoning(encrypted, sent[2:]) is None  # no reasoning to leave out
    by_id = error_from_http(400, {}, (
        b'{"error": {"message": "Item with id \'rs_42\' not found. Items are not persisted when `store` is set to false. '
        b'Try again with `store` set to true, or remove this item from your input.", "type": "invalid_request_error", "param": "input", "code": null}}'
    ), url="u")
    assert refused_reasoning(by_id, [{"type": "reasoning", "id": "rs_42", "summary": []}, mine]) == {"rs_42"}
    for message in ("The encrypted content for item rs_12....3abc could not be verified. Reason: Encrypted content could not be decrypted or parsed.",):
        error = BadModelRequest(message, upstream_code="invalid_encrypted_content")
        assert refused_reasoning(error, [{"type": "reasoning", "id": "rs_12ffff3abc"}, mine]) == {"rs_12ffff3abc"}
    compaction = BadModelRequest("The encrypted content for item cmp_34....b7bd could not be verified.", upstream_code="invalid_encrypted_content")
    assert refused_reasoning(compaction, sent) is None  # not a reasoning item: nothing to drop that would help
    other = error_from_http(400, {}, body("unsupported_value", "nope"), url="u")
    assert not is_summary_refusal(other) and refused_reasoning(other, sent) is None


def test_backend_detail_bodies() -> None:
    error = error_from_http(400, {}, b'{"detail": "Instructions are required"}', url="u")
    assert isinstance(error, BadModelRequest) and error.message.endswith("HTTP 400: Instructions are required")
