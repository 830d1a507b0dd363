"""Faults, retries, timeouts and cancellation, end to end against the mock upstream."""

from __future__ import annotations

import socket

import pytest
import trio

from echsd.codex import (
    ApiKeyAuth,
    AuthFailed,
    Completed,
    ContextWindowExceeded,
    OutputInterrupted,
    Retrying,
    Endpoint,
    RateLimited,
    ResponseFailed,
    ResponseIncomplete,
    ResponsesClient,
    StreamBroken,
    TextDelta,
    UpstreamUnavailable,
)
from echsd.codex.mock import MockUpstream, open_mock_upstream
from tests.codex.helpers import (
    RecordingBackoff,
    client_for,
    collect,
    collect_until_error,
    collect_with,
    directive,
    of_type,
    output_of,
    request,
    text_of,
    user,
)


async def test_http_5xx_is_retried_then_succeeds(mock: MockUpstream, backoff: RecordingBackoff) -> None:
    client = client_for(mock.base_url, backoff)
    events = await collect(client, request(directive({"text": "ok now", "fault": "http", "status": 500, "times": 2})))
    assert text_of(events) == "ok now"
    assert len(mock.requests) == 3 and len(backoff.delays) == 2
    assert backoff.delays[1] > backoff.delays[0] * 1.1  # exponential


async def test_http_503_exhausts_retries(mock: MockUpstream, backoff: RecordingBackoff) -> None:
    client = client_for(mock.base_url, backoff, max_retries=2)
    events, error = await collect_until_error(client, request(directive({"fault": {"type": "http", "status": 503, "message": "overloaded"}})))
    assert output_of(events) == [] and isinstance(error, UpstreamUnavailable)
    retries = of_type(events, Retrying)
    assert [(r.attempt, r.max_retries, r.delay_s, r.code) for r in retries] == [
        (1, 2, backoff.delays[0], "upstream_unavailable"),
        (2, 2, backoff.delays[1], "upstream_unavailable"),
    ]
    assert "HTTP 503: overloaded" in retries[0].reason
    assert "after 3 attempts" in error.message and "overloaded" in error.message
    assert isinstance(error.cause, UpstreamUnavailable) and error.cause.status == 503
    assert len(mock.requests) == 3 and len(backoff.delays) == 2


async def test_429_honours_retry_after(mock: MockUpstream, backoff: RecordingBackoff) -> None:
    client = client_for(mock.base_url, backoff)
    step = {"text": "fine", "fault": "http", "status": 429, "retry_after": 7, "times": 1}
    assert text_of(await collect(client, request(directive(step)))) == "fine"
    assert backoff.delays == [7.0]
    step = {"text": "fine", "fault": "http", "status": 429, "message": "Rate limit reached. Please try again in 1.5s.", "times": 1}
    assert text_of(await collect(client, request(directive(step)))) == "fine"
    assert backoff.delays == [7.0, 1.5]


async def test_429_exhausted_is_rate_limited(mock: MockUpstream, backoff: RecordingBackoff) -> None:
    client = client_for(mock.base_url, backoff, max_retries=1)
    _, error = await collect_until_error(client, request(directive({"fault": "http", "status": 429})))
    assert isinstance(error, RateLimited) and error.code == "rate_limited" and not error.retryable
    assert error.message.startswith("rate limited after 2 attempts")
    assert len(mock.requests) == 2


async def test_4xx_is_not_retried(mock: MockUpstream, backoff: RecordingBackoff) -> None:
    client = client_for(mock.base_url, backoff)
    step = {"fault": "http", "status": 400, "code": "context_length_exceeded", "message": "input too long"}
    _, error = await collect_until_error(client, request(directive(step)))
    assert isinstance(error, ContextWindowExceeded) and "input too long" in error.message
    assert len(mock.requests) == 1 and backoff.delays == []


async def test_drop_before_any_event_is_retried(mock: MockUpstream, backoff: RecordingBackoff) -> None:
    client = client_for(mock.base_url, backoff)
    events = await collect(client, request(directive({"text": "second time lucky", "fault": "drop", "times": 1})))
    assert text_of(events) == "second time lucky"
    assert len(mock.requests) == 2 and len(backoff.delays) == 1


async def test_drop_after_deltas_is_output_interrupted(mock: MockUpstream, backoff: RecordingBackoff) -> None:
    client = client_for(mock.base_url, backoff)
    step = {"text": "one two three four", "fault": "drop", "after_deltas": 2}
    events, error = await collect_until_error(client, request(directive(step)))
    assert text_of(events) == "one two "
    assert isinstance(error, OutputInterrupted) and isinstance(error, StreamBroken) and "cut off" in error.message
    assert error.after_output and error.attempt == 1 and error.code == "stream_broken"
    assert len(mock.requests) == 1 and backoff.delays == []  # the caller re-requests; the client waits then


async def test_stall_after_output_hits_the_idle_timeout(mock: MockUpstream, backoff: RecordingBackoff) -> None:
    client = client_for(mock.base_url, backoff, idle_timeout_s=0.3)
    events, error = await collect_until_error(client, request(directive({"text": "a b c", "fault": "stall", "after_deltas": 1})))
    assert text_of(events) == "a "
    assert isinstance(error, OutputInterrupted) and "stalled" in error.message
    assert len(mock.requests) == 1
    with trio.fail_after(5):
        await mock.requests[0].disconnected.wait()


async def test_stall_before_output_is_retried(mock: MockUpstream, backoff: RecordingBackoff) -> None:
    client = client_for(mock.base_url, backoff, idle_timeout_s=0.3)
    events = await collect(client, request(directive({"text": "awake", "fault": "stall", "times": 1})))
    assert text_of(events) == "awake" and len(mock.requests) == 2


async def test_non_json_data_lines_are_skipped(mock: MockUpstream, backoff: RecordingBackoff) -> None:
    client = client_for(mock.base_url, backoff)
    for after in (0, 1, 3):
        events = await collect(client, request(directive({"text": "x y z", "fault": "junk", "after_deltas": after})))
        assert text_of(events) == "x y z" and isinstance(events[-1], Completed)
    assert len(mock.requests) == 3 and backoff.delays == []
    # A malformed line that ends the body is a stream cut short: retried, then reported.
    _, error = await collect_until_error(client, request(directive({"text": "x y", "fault": "malformed"})))
    assert isinstance(error, UpstreamUnavailable) and isinstance(error.cause, StreamBroken)
    assert "before response.completed" in error.message


@pytest.mark.parametrize(
    ("code", "expected"),
    [("context_length_exceeded", ContextWindowExceeded), ("invalid_prompt", ResponseFailed), ("insufficient_quota", None)],
)
async def test_failed_maps_by_code(mock: MockUpstream, code: str, expected: type | None) -> None:
    client = client_for(mock.base_url)
    _, error = await collect_until_error(client, request(directive({"fault": "failed", "code": code, "message": "nope"})))
    if expected is None:
        assert error.code == "usage_limit"
    else:
        assert type(error) is expected and error.message == "nope" and error.upstream_code == code
    assert len(mock.requests) == 1


async def test_transient_failed_response_is_retried(mock: MockUpstream, backoff: RecordingBackoff) -> None:
    client = client_for(mock.base_url, backoff)
    events = await collect(client, request(directive({"text": "recovered", "fault": "failed", "code": "server_error", "times": 1})))
    assert text_of(events) == "recovered" and len(backoff.delays) == 1


async def test_rate_limit_error_event_waits_as_told(mock: MockUpstream, backoff: RecordingBackoff) -> None:
    client = client_for(mock.base_url, backoff)
    step = {"text": "ok", "fault": "error", "code": "rate_limit_exceeded", "message": "Please try again in 0.2s", "times": 1}
    assert text_of(await collect(client, request(directive(step)))) == "ok"
    assert backoff.delays == [0.2]


async def test_incomplete_after_output(mock: MockUpstream) -> None:
    client = client_for(mock.base_url)
    step = {"text": "long answer here", "fault": "incomplete", "reason": "max_output_tokens", "after_deltas": 2}
    events, error = await collect_until_error(client, request(directive(step)))
    assert text_of(events) == "long answer "
    assert isinstance(error, ResponseIncomplete) and error.reason == "max_output_tokens"


async def test_cancelled_stream_is_closed_and_not_retried(mock: MockUpstream, backoff: RecordingBackoff) -> None:
    client = client_for(mock.base_url, backoff)
    seen: list[TextDelta] = []
    with trio.CancelScope() as scope:
        async with client.stream(request(directive({"text": "w " * 50, "delay_ms": 20}))) as events:
            async for event in events:
                if isinstance(event, TextDelta):
                    seen.append(event)
                    if len(seen) == 2:
                        scope.cancel()
    assert scope.cancelled_caught and len(seen) == 2
    with trio.fail_after(5):
        await mock.requests[0].disconnected.wait()
    assert len(mock.requests) == 1 and backoff.delays == []
    # The client stays usable.
    assert text_of(await collect(client, request(user("again")))) == "mock reply to: again"


async def test_break_closes_the_stream(mock: MockUpstream) -> None:
    client = client_for(mock.base_url)
    async with client.stream(request(directive({"text": "w " * 50, "delay_ms": 20}))) as events:
        async for event in events:
            if isinstance(event, TextDelta):
                break
    with trio.fail_after(5):
        await mock.requests[0].disconnected.wait()


async def test_unreachable_port(backoff: RecordingBackoff) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = client_for(f"http://127.0.0.1:{port}/v1", backoff, max_retries=2)
    _, error = await collect_until_error(client, request(user("hi")))
    assert isinstance(error, UpstreamUnavailable) and len(backoff.delays) == 2
    assert "connection refused" in error.message and f"127.0.0.1:{port}" in error.message


async def test_api_key_401_is_final(backoff: RecordingBackoff) -> None:
    async with open_mock_upstream(require_token="right-key-123") as mock:
        client = ResponsesClient(Endpoint(mock.base_url, ApiKeyAuth("wrong-key-456")), backoff=backoff)
        _, error = await collect_until_error(client, request(user("hi")))
        assert isinstance(error, AuthFailed) and error.status == 401
        assert len(mock.requests) == 1 and mock.requests[0].bearer == "wrong-key-456"
        good = ResponsesClient(Endpoint(mock.base_url, ApiKeyAuth("right-key-123")), backoff=backoff)
        assert text_of(await collect(good, request(user("hi")))) == "mock reply to: hi"
        assert mock.requests[1].headers["authorization"] == "Bearer [REDACTED]"


async def test_each_retry_is_announced_before_the_wait(mock: MockUpstream, backoff: RecordingBackoff) -> None:
    client = client_for(mock.base_url, backoff)
    seen_waits: list[int] = []
    retries: list[Retrying] = []
    async with client.stream(request(directive({"text": "fine", "fault": "http", "status": 502, "times": 2}))) as events:
        async for event in events:
            if isinstance(event, Retrying):
                retries.append(event)
                seen_waits.append(len(backoff.delays))
    assert [r.attempt for r in retries] == [1, 2] and seen_waits == [0, 1]  # announced, then waited
    assert [r.delay_s for r in retries] == backoff.delays and all(r.code == "upstream_unavailable" for r in retries)


async def test_output_interrupted_is_re_requested_within_the_budget(mock: MockUpstream, backoff: RecordingBackoff) -> None:
    client = client_for(mock.base_url, backoff)
    budget = client.retry_budget()
    step = directive({"text": "one two three four", "fault": "drop", "after_deltas": 2, "times": 1})
    partial, error = await collect_with(client, request(step), budget)
    assert text_of(partial) == "one two " and isinstance(error, OutputInterrupted)
    assert (error.attempt, budget.failures) == (1, 1) and backoff.delays == []
    again, error = await collect_with(client, request(step), budget)
    assert error is None and isinstance(again[0], Retrying)
    assert (again[0].attempt, again[0].delay_s) == (1, backoff.delays[0]) and "cut off" in again[0].reason
    assert text_of(again) == "one two three four" and len(mock.requests) == 2


async def test_output_interruptions_spend_the_same_budget(mock: MockUpstream, backoff: RecordingBackoff) -> None:
    client = client_for(mock.base_url, backoff, max_retries=1)
    budget = client.retry_budget()
    step = directive({"text": "a b c", "fault": "drop", "after_deltas": 1})
    _, error = await collect_with(client, request(step), budget)
    assert isinstance(error, OutputInterrupted)
    events, error = await collect_with(client, request(step), budget)
    assert isinstance(events[0], Retrying) and text_of(events) == "a "
    assert isinstance(error, UpstreamUnavailable) and not isinstance(error, OutputInterrupted)
    assert "after 2 attempts" in error.message and isinstance(error.cause, StreamBroken)


async def test_failure_after_output_that_is_final_surfaces_as_is(mock: MockUpstream, backoff: RecordingBackoff) -> None:
    client = client_for(mock.base_url, backoff)
    step = directive({"text": "a b c", "fault": "failed", "code": "invalid_prompt", "message": "flagged", "after_deltas": 1})
    events, error = await collect_until_error(client, request(step))
    assert text_of(events) == "a " and type(error) is ResponseFailed and not error.after_output
    transient = directive({"text": "a b c", "fault": "failed", "code": "server_error", "after_deltas": 1})
    _, error = await collect_until_error(client, request(transient))
    assert isinstance(error, OutputInterrupted) and error.cause is not None and error.cause.upstream_code == "server_error"
