"""Real-endpoint quirks over real HTTP: the mock answers each as the real endpoint does
(status, body, headers), and the client sends what is accepted or falls back once."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from echsd.codex import (
    BadModelRequest,
    Completed,
    ContextWindowExceeded,
    Endpoint,
    ItemDone,
    RateLimitsUpdated,
    ReasoningDropped,
    ResponsesClient,
    ResponsesRequest,
    SummaryUnavailable,
    UsageLimitReached,
)
from echsd.codex.endpoint_memory import EndpointMemory
from echsd.codex.mock import MockUpstream
from echsd.codex.mock.checks import VERIFY_MESSAGE
from tests.codex.helpers import client_for, collect, collect_until_error, directive, of_type, text_of, user

TOOL = {"type": "function", "name": "f", "description": "f", "parameters": {"type": "object"}, "strict": False}


async def post(mock: MockUpstream, body: dict[str, Any], path: str = "/v1/responses") -> tuple[int, Any]:
    root = mock.base_url.removesuffix("/v1")
    async with httpx.AsyncClient() as http:
        answer = await http.post(root + path, json=body)
    return answer.status_code, answer.json() if answer.headers.get("content-type") == "application/json" else None


def raw(model: str, **fields: Any) -> dict[str, Any]:
    return {"model": model, "instructions": "be brief", "input": [user("hi")], "stream": True, "store": False, **fields}


def req(model: str, *items: dict[str, Any], **kwargs: Any) -> ResponsesRequest:
    return ResponsesRequest(model=model, instructions="be brief", input=list(items) or [user("hi")], **kwargs)


async def test_non_reasoning_model_refuses_reasoning_and_encrypted_include(mock: MockUpstream) -> None:
    assert await post(mock, raw("gpt-4.1", reasoning={"effort": "medium"})) == (400, {"error": {
        "message": "Unsupported parameter: 'reasoning.effort' is not supported with this model.",
        "type": "invalid_request_error", "param": "reasoning.effort", "code": "unsupported_parameter"}})
    assert await post(mock, raw("gpt-4o", include=["reasoning.encrypted_content"])) == (400, {"error": {
        "message": "Encrypted content is not supported with this model.",
        "type": "invalid_request_error", "param": "include", "code": None}})
    # The client asks for neither, whatever effort the thread has.
    client = client_for(mock.base_url)
    events = await collect(client, req("gpt-4.1", reasoning_effort="high"))
    assert text_of(events) == "mock reply to: hi"
    body = mock.requests[-1].body
    assert "reasoning" not in body and "include" not in body


async def test_effort_outside_the_models_list_is_refused(mock: MockUpstream) -> None:
    status, answer = await post(mock, raw("gpt-5.1", reasoning={"effort": "minimal"}))
    assert status == 400 and answer["error"] == {
        "message": "Unsupported value: 'minimal' is not supported with the 'gpt-5.1' model. "
        "Supported values are: 'none', 'low', 'medium', and 'high'.",
        "type": "invalid_request_error", "param": "reasoning.effort", "code": "unsupported_value"}
    assert (await post(mock, raw("gpt-5.1", reasoning={"effort": "high"})))[0] == 200


async def test_parallel_tool_calls_without_tools_is_refused(mock: MockUpstream) -> None:
    assert await post(mock, raw("gpt-5.5", tools=[], parallel_tool_calls=True)) == (400, {"error": {
        "message": "Invalid value for 'parallel_tool_calls': 'parallel_tool_calls' is only allowed when 'tools' are specified.",
        "type": "invalid_request_error", "param": "parallel_tool_calls", "code": None}})
    client = client_for(mock.base_url)
    await collect(client, req("gpt-5.5", reasoning_effort="low"))  # a tool-less thread, or probe
    assert "parallel_tool_calls" not in mock.requests[-1].body
    await collect(client, req("gpt-5.5", tools=[TOOL]))
    assert mock.requests[-1].body["parallel_tool_calls"] is True


async def test_backend_refuses_empty_instructions_and_the_client_never_sends_them(mock: MockUpstream) -> None:
    path = "/backend-api/codex/responses"
    assert await post(mock, raw("gpt-5.5", instructions=""), path) == (400, {"detail": "Instructions are required"})
    assert await post(mock, {k: v for k, v in raw("gpt-5.5").items() if k != "instructions"}, path) == (
        400, {"detail": "Instructions are required"})
    assert await post(mock, raw("gpt-5.5", input="hi"), path) == (400, {"detail": "Input must be a list"})
    assert (await post(mock, raw("gpt-5.5", instructions=""), "/v1/responses"))[0] == 200  # the API does not mind
    backend = mock.base_url.removesuffix("/v1") + "/backend-api/codex"
    client = ResponsesClient(Endpoint(backend), idle_timeout_s=5.0)
    events = await collect(client, ResponsesRequest(model="gpt-5.5", instructions="", input=[user("hi")]))
    assert text_of(events) == "mock reply to: hi" and mock.requests[-1].path == path


async def test_backend_refuses_stored_responses_and_the_client_asks_none(mock: MockUpstream) -> None:
    path = "/backend-api/codex/responses"
    assert await post(mock, raw("gpt-5.5", store=True), path) == (400, {"detail": "Store must be set to false"})
    assert await post(mock, {k: v for k, v in raw("gpt-5.5").items() if k != "store"}, path) == (400, {"detail": "Store must be set to false"})
    assert (await post(mock, raw("gpt-5.5", store=True)))[0] == 200  # the API stores them
    backend = Endpoint(mock.base_url.removesuffix("/v1") + "/backend-api/codex", provider="codex")
    assert not backend.stores_responses and Endpoint(mock.base_url).stores_responses


async def test_reasoning_without_encrypted_content_is_refused_as_the_api_does(mock: MockUpstream) -> None:
    bare = {"type": "reasoning", "summary": []}
    status, answer = await post(mock, raw("gpt-5.5", input=[user("hi"), bare], reasoning={"effort": "low"}))
    assert status == 400 and answer["error"]["code"] == "invalid_encrypted_content"
    with_id = {"type": "reasoning", "id": "rs_8395fc2c", "summary": []}
    status, answer = await post(mock, raw("gpt-5.5", input=[user("hi"), with_id], reasoning={"effort": "low"}))
    assert status == 400 and answer["error"] == {
        "message": "Item with id 'rs_8395fc2c' not found. Items are not persisted when `store` is set to false. "
        "Try again with `store` set to true, or remove this item from your input.",
        "type": "invalid_request_error", "param": "input", "code": None}
    # The client never sends them (they would fail every later request of the thread).
    client = client_for(mock.base_url)
    assert text_of(await collect(client, req("gpt-5.5", user("hi"), bare, with_id, reasoning_effort="low"))) == "mock reply to: hi"
    assert [item["type"] for item in mock.requests[-1].body["input"]] == ["message"]


async def test_a_scripted_invalid_encrypted_content_is_repaired_once(mock: MockUpstream) -> None:
    client = client_for(mock.base_url)
    script = directive({"steps": [{"reasoning": "plan", "calls": [{"name": "f", "arguments": {}, "call_id": "c1"}]},
                                  {"text": "after", "fault": "invalid_encrypted_content", "times": 1}]})
    first = await collect(client, req("gpt-5.5", script, reasoning_effort="medium"))
    made = [e.item for e in first if isinstance(e, ItemDone)]
    history = [script, *made, {"type": "function_call_output", "call_id": "c1", "output": "ok"}]
    events = await collect(client, req("gpt-5.5", *history, reasoning_effort="medium"))
    refused, resent = mock.requests[-2:]
    assert "reasoning" in [item["type"] for item in refused.body["input"]]  # carried over, then refused as the API words it
    [dropped] = of_type(events, ReasoningDropped)
    assert dropped.removed == 1 and dropped.message.endswith("could not be verified.") and dropped.keys == {made[0]["encrypted_content"]}
    assert "reasoning" not in [item["type"] for item in resent.body["input"]] and text_of(events) == "after"


async def test_unverified_organisation_falls_back_to_no_summary(mock: MockUpstream, tmp_path: Path) -> None:
    unverified = directive({"endpoint": {"org_verified": False}, "steps": [{"reasoning": "thinking", "text": "answer"}]})
    status, answer = await post(mock, raw("gpt-5.5", input=[unverified], reasoning={"effort": "low", "summary": "auto"}))
    assert status == 400 and answer["error"] == {
        "message": VERIFY_MESSAGE, "type": "invalid_request_error", "param": "reasoning.summary", "code": "unsupported_value"}
    assert VERIFY_MESSAGE.startswith("Your organization must be verified to generate reasoning summaries.")
    remembered = tmp_path / "endpoint-memory.json"
    client = client_for(mock.base_url, memory=EndpointMemory(mock.base_url, remembered))
    before = mock.app.received
    events = await collect(client, req("gpt-5.4", unverified, reasoning_effort="low"))  # a model whose catalog entry asks for summaries
    notices = of_type(events, SummaryUnavailable)
    assert len(notices) == 1 and "must be verified" in notices[0].message
    assert text_of(events) == "answer" and isinstance(events[-1], Completed)
    first, second = mock.requests[-2:]
    assert mock.app.received - before == 2
    assert first.body["reasoning"] == {"effort": "low", "summary": "auto"}
    assert second.body["reasoning"] == {"effort": "low"} and second.body["include"] == ["reasoning.encrypted_content"]
    # The client remembers it for the endpoint: no summary at all, one request.
    await collect(client, req("gpt-5.4", unverified, reasoning_effort="low"))
    assert mock.app.received - before == 3 and "summary" not in mock.requests[-1].body["reasoning"]
    # And so does the next process on the same state dir; another endpoint starts afresh.
    again = client_for(mock.base_url, memory=EndpointMemory(mock.base_url, remembered))
    await collect(again, req("gpt-5.4", unverified, reasoning_effort="low"))
    assert mock.app.received - before == 4 and "summary" not in mock.requests[-1].body["reasoning"]
    assert not EndpointMemory("http://elsewhere/v1", remembered).summaries_refused


async def test_reasoning_from_another_model_is_dropped_after_invalid_encrypted_content(mock: MockUpstream) -> None:
    client = client_for(mock.base_url)
    script = directive({"steps": [{"reasoning": "plan", "calls": [{"name": "f", "arguments": {}, "call_id": "c1"}]}, {"text": "done it"}]})
    first = await collect(client, req("gpt-5.5", script, reasoning_effort="medium"))
    made = [e.item for e in first if isinstance(e, ItemDone)]
    assert made[0]["type"] == "reasoning" and made[0]["encrypted_content"]
    history = [script, *made, {"type": "function_call_output", "call_id": "c1", "output": "ok"}]
    # The same model may read its own reasoning back.
    assert text_of(await collect(client, req("gpt-5.5", *history, reasoning_effort="medium"))) == "done it"
    # Another model may not: the real endpoint's refusal, word for word...
    status, answer = await post(mock, raw("gpt-5.4", input=history, reasoning={"effort": "low"}, include=["reasoning.encrypted_content"]))
    assert status == 400 and answer["error"]["code"] == "invalid_encrypted_content"
    assert answer["error"]["type"] == "invalid_request_error" and answer["error"]["param"] is None
    assert answer["error"]["message"].startswith("The encrypted content mock...") and answer["error"]["message"].endswith(
        " could not be verified.")
    # ... and the client resends once without the reasoning items, telling the caller.
    events = await collect(client, req("gpt-5.4", *history, reasoning_effort="low"))
    dropped = of_type(events, ReasoningDropped)
    assert len(dropped) == 1 and dropped[0].removed == 1 and "could not be verified" in dropped[0].message
    assert text_of(events) == "done it"
    assert [i["type"] for i in mock.requests[-1].body["input"]] == ["message", "function_call", "function_call_output"]


async def test_each_refusal_gets_one_corrected_resend_only(mock: MockUpstream) -> None:
    """Refused again after the corrected resend: the error surfaces, no loop."""
    client = client_for(mock.base_url)
    verify = {"fault": "http", "status": 400, "message": "Your organization must be verified to generate reasoning summaries."}
    before = mock.app.received
    events, error = await collect_until_error(client, req("gpt-5.4", directive(verify), reasoning_effort="low"))
    assert isinstance(error, BadModelRequest) and len(of_type(events, SummaryUnavailable)) == 1
    assert mock.app.received - before == 2
    alien = {"type": "reasoning", "summary": [], "encrypted_content": "gAAAAB-from-elsewhere"}
    refused = {
        "fault": "http",
        "status": 400,
        "code": "invalid_encrypted_content",
        "message": "The encrypted content gAAA...here could not be verified.",
    }
    events, error = await collect_until_error(client, req("gpt-5.5", user("x"), alien, directive(refused), reasoning_effort="low"))
    assert isinstance(error, BadModelRequest) and error.upstream_code == "invalid_encrypted_content"
    assert len(of_type(events, ReasoningDropped)) == 1 and mock.app.received - before == 4
    # Without reasoning items in the input there is nothing to drop: no resend.
    _, error = await collect_until_error(client, req("gpt-5.5", directive(refused), reasoning_effort="low"))
    assert isinstance(error, BadModelRequest) and mock.app.received - before == 5


async def test_usage_limit_in_stream_is_classified_by_type_with_reset_times(mock: MockUpstream) -> None:
    client = client_for(mock.base_url)
    _, error = await collect_until_error(client, req("gpt-5.5", directive({"fault": "usage_limit", "resets_in_seconds": 5400})))
    assert isinstance(error, UsageLimitReached) and error.code == "usage_limit"
    assert error.upstream_type == "usage_limit_reached" and error.upstream_code is None
    assert error.plan_type == "plus" and error.resets_in_seconds == 5400
    assert error.resets_at is not None and abs(error.resets_at - (time.time() + 5400)) < 30
    assert "The usage limit has been reached (plan plus); resets in 1 h 30 min, at 20" in error.message
    assert len(mock.requests) == 1  # not retried


async def test_usage_limit_as_http_429_is_not_a_rate_limit(mock: MockUpstream) -> None:
    client = client_for(mock.base_url)
    step = {"fault": "http", "status": 429, "error_type": "usage_limit_reached", "resets_in_seconds": 120}
    status, answer = await post(mock, raw("gpt-5.5", input=[directive(step)]))
    assert status == 429 and set(answer["error"]) == {"type", "message", "plan_type", "resets_at", "resets_in_seconds"}
    _, error = await collect_until_error(client, req("gpt-5.5", directive(step)))
    assert isinstance(error, UsageLimitReached) and error.status == 429 and error.resets_in_seconds == 120
    assert "resets in 2 min" in error.message


async def test_rate_limit_headers_and_event_are_reported(mock: MockUpstream) -> None:
    limits = {
        "primary": {"used_percent": 42.5, "window_minutes": 300, "resets_in_seconds": 600},
        "secondary": {"used_percent": 7, "window_minutes": 10080},
        "credits": {"has_credits": True, "unlimited": False, "balance": "12.5"},
        "plan_type": "pro",
    }
    client = client_for(mock.base_url)
    events = await collect(client, req("gpt-5.5", directive({"text": "ok", "rate_limits": limits})))
    updates = of_type(events, RateLimitsUpdated)
    assert len(updates) == 2 and events[0] is updates[0]  # headers first, before any output
    from_headers, from_event = updates[0].limits[0], updates[1].limits[0]
    assert from_headers.limit_id == from_event.limit_id == "codex"
    assert from_headers.primary == from_event.primary and from_headers.primary is not None
    assert from_headers.primary.used_percent == 42.5 and from_headers.primary.window_minutes == 300
    assert from_headers.primary.resets_at is not None and abs(from_headers.primary.resets_at - (time.time() + 600)) < 30
    assert from_headers.secondary is not None and from_headers.secondary.resets_at is None
    assert from_headers.credits == from_event.credits and from_headers.credits is not None
    assert from_headers.credits.balance == "12.5" and not from_headers.credits.unlimited
    assert from_event.plan_type == "pro" and from_headers.plan_type is None
    assert from_event.to_dict()["primary"]["used_percent"] == 42.5
    assert text_of(events) == "ok"
    plain = await collect(client, req("gpt-5.5"))
    assert of_type(plain, RateLimitsUpdated) == []  # nothing reported, nothing emitted


async def test_context_length_exceeded(mock: MockUpstream) -> None:
    small = directive({"endpoint": {"context_window": 50}, "text": "fits"})
    padding = user("x" * 400)
    status, answer = await post(mock, raw("gpt-5.5", input=[padding, small]))
    assert status == 400 and answer["error"] == {
        "message": "Your input exceeds the context window of this model. Please adjust your input and try again.",
        "type": "invalid_request_error", "param": "input", "code": "context_length_exceeded"}
    client = client_for(mock.base_url)
    _, error = await collect_until_error(client, req("gpt-5.5", padding, small))
    assert isinstance(error, ContextWindowExceeded) and error.status == 400 and len(mock.requests) == 2
    assert text_of(await collect(client, req("gpt-5.5", directive({"endpoint": {"context_window": 5000}, "text": "fits"})))) == "fits"
    _, error = await collect_until_error(client, req("gpt-5.5", directive({"fault": "failed", "code": "context_length_exceeded"})))
    assert isinstance(error, ContextWindowExceeded)


async def test_session_and_thread_headers_carry_the_thread(mock: MockUpstream) -> None:
    client = client_for(mock.base_url)
    await collect(client, req("gpt-5.5", session_id="thr_0123456789abcdef"))
    headers = mock.requests[-1].headers
    assert headers["session-id"] == headers["thread-id"] == headers["x-client-request-id"] == "thr_0123456789abcdef"
    await collect(client, req("gpt-5.5"))
    assert not {"session-id", "thread-id", "session_id"} & set(mock.requests[-1].headers)


@pytest.mark.parametrize("model", ["gpt-5.5", "gpt-4.1", "o3", "mock-model", "not-in-any-catalog"])
async def test_every_request_shape_is_accepted_by_the_mock(mock: MockUpstream, model: str) -> None:
    """Whatever the model, what the client builds passes the real endpoints' checks."""
    client = client_for(mock.base_url)
    for tools in ([], [TOOL]):
        events, error = await collect_until_error(client, req(model, reasoning_effort="medium", tools=tools, session_id="thr_1"))
        assert error is None and isinstance(events[-1], Completed)
    with trio.fail_after(5):
        await mock.wait_requests(2)


async def test_bad_model_request_is_not_retried(mock: MockUpstream) -> None:
    client = client_for(mock.base_url)
    _, error = await collect_until_error(client, req("gpt-5.5", directive({"fault": "http", "status": 400, "message": "nope"})))
    assert isinstance(error, BadModelRequest) and len(mock.requests) == 1
