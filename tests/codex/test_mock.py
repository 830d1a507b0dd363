"""The mock upstream itself: scripting, step selection, introspection routes."""

from __future__ import annotations

import hashlib
import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import trio

from echsd.codex import ApiKeyAuth, Endpoint, ItemDone, ResponsesClient
from echsd.codex.mock import (
    MockUpstream,
    ScriptError,
    load_script,
    open_mock_upstream,
    parse_script,
)
from echsd.codex.mock.script import Step, parse_step
from echsd.codex.mock.selection import segment_rounds, select
from tests.codex.helpers import (
    RecordingBackoff,
    client_for,
    collect,
    collect_until_error,
    directive,
    request,
    text_of,
    user,
)

ASSISTANT = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "x"}]}
CALL = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}
OUTPUT = {"type": "function_call_output", "call_id": "c1", "output": "ok"}


async def http(method: str, url: str) -> tuple[int, Any]:
    def go() -> tuple[int, Any]:
        req = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
        try:
            with urllib.request.urlopen(req, timeout=5) as answer:
                return answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    return await trio.to_thread.run_sync(go)


def test_rounds_are_runs_of_model_output_between_user_messages() -> None:
    items = [user("a"), ASSISTANT, user("b"), {"type": "reasoning", "summary": []}, CALL, OUTPUT, CALL, OUTPUT, ASSISTANT]
    assert segment_rounds(items) == [1, 3]
    assert segment_rounds([ASSISTANT, user("a")]) == [0]


def test_directive_step_follows_rounds_and_then_done() -> None:
    script = directive({"steps": [{"text": "zero"}, {"text": "one"}]})
    assert select(None, [script]).step.text == "zero"
    assert select(None, [script, CALL, OUTPUT]).step.text == "one"
    assert select(None, [script, CALL, OUTPUT, ASSISTANT, CALL, OUTPUT]).step.text == "done"
    # Only the last user message scripts: a later plain message gets the plain reply...
    assert select(None, [script, CALL, OUTPUT, ASSISTANT, user("next")]).step.text == "mock reply to: next"
    assert select(None, [script, user("steered in"), CALL, OUTPUT]).step.text == "mock reply to: steered in"
    # ... and a later directive counts from itself.
    assert select(None, [script, ASSISTANT, directive({"text": "fresh"})]).step.text == "fresh"


def test_echo_uses_the_last_user_text_and_string_input() -> None:
    assert select(None, [user("a"), ASSISTANT, user("b" * 300)]).step.text == "mock reply to: " + "b" * 200
    assert select(None, []).step.text == "mock reply to: "


def test_step_parsing_accepts_both_fault_forms_and_rejects_typos() -> None:
    flat = parse_step({"fault": "http", "status": 503, "retry_after": 2, "times": 1})
    nested = parse_step({"fault": {"type": "http", "status": 503, "retry_after": "2", "times": 1}})
    assert flat == nested and flat.fault.retry_after == "2" and flat.times == 1
    for bad in ({"txt": "x"}, {"fault": "boom"}, {"status": 500}, {"calls": [{"arguments": {}}]}, {"delay_ms": -1},
                {"usage": {"tokens": 1}}, {"repeat": {"chunk": "x"}}, {"text": True}):
        with pytest.raises(ScriptError):
            parse_step(bad)


def test_script_file_json_and_toml(tmp_path: Path) -> None:
    doc = {"rules": [{"match": "weather", "steps": [{"text": "sunny"}, {"text": "still sunny"}]}], "default": [{"text": "dunno"}]}
    (tmp_path / "s.json").write_text(json.dumps(doc))
    (tmp_path / "s.toml").write_text(
        '[[rules]]\nmatch = "weather"\n[[rules.steps]]\ntext = "sunny"\n[[rules.steps]]\ntext = "still sunny"\n'
        '[[default]]\ntext = "dunno"\n'
    )
    assert load_script(tmp_path / "s.json") == load_script(tmp_path / "s.toml") == parse_script(doc)
    script = parse_script(doc)
    assert select(script, [user("how is the weather?")]).step.text == "sunny"
    assert select(script, [user("how is the weather?"), CALL, OUTPUT]).step.text == "still sunny"
    assert select(script, [user("hello")]).step.text == "dunno"
    assert select(parse_script({"rules": []}), [user("hello")]).step.text == "mock reply to: hello"
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ScriptError, match="bad.json"):
        load_script(tmp_path / "bad.json")


async def test_script_given_in_process() -> None:
    doc = {"rules": [{"match": "ping", "steps": [{"text": "pong"}]}]}
    async with open_mock_upstream(doc) as mock:
        client = client_for(mock.base_url)
        assert text_of(await collect(client, request(user("ping?")))) == "pong"
        assert text_of(await collect(client, request(user("other")))) == "mock reply to: other"


async def test_fault_times_are_counted_per_script_step(mock: MockUpstream) -> None:
    client = client_for(mock.base_url, max_retries=0)
    script = {"steps": [{"text": "a", "fault": "http", "status": 500, "times": 1}]}
    _, error = await collect_until_error(client, request(directive(script)))
    assert error is not None and error.status == 500
    assert text_of(await collect(client, request(directive(script)))) == "a"
    mock.reset()
    _, error = await collect_until_error(client, request(directive(script)))
    assert error is not None  # reset forgets the counts


async def test_compaction_keeps_the_script_position(mock: MockUpstream) -> None:
    client = client_for(mock.base_url)
    call = {"calls": [{"name": "f", "arguments": {}, "call_id": "c1"}]}
    script = directive({"steps": [{"text": "zero", **call}, {"text": "one", **call}, {"text": "two"}]})
    history: list[dict] = [user("earlier"), ASSISTANT, script]
    for expected in ("zero", "one"):
        events = await collect(client, request(*history))
        assert text_of(events) == expected
        history += [e.item for e in events if isinstance(e, ItemDone)] + [OUTPUT]
    compacted = await client.compact(model="m", instructions="", input=history)
    assert [i.get("role") for i in compacted[:-1]] == ["user", "user"]
    assert text_of(await collect(client, request(*compacted))) == "two"


async def test_introspection_routes_redact_credentials() -> None:
    async with open_mock_upstream(inspect=True) as mock:
        client = ResponsesClient(Endpoint(mock.base_url, ApiKeyAuth("sk-secret-value-1234")), backoff=RecordingBackoff())
        await collect(client, request(user("hi")))
        root = mock.base_url.removesuffix("/v1")
        status, listed = await http("GET", root + "/_mock/requests")
        assert status == 200 and len(listed) == 1
        entry = listed[0]
        assert entry["path"] == "/v1/responses" and entry["method"] == "POST"
        assert entry["auth_scheme"] == "Bearer"
        assert entry["bearer_sha256"] == hashlib.sha256(b"sk-secret-value-1234").hexdigest()
        assert entry["headers"]["authorization"] == "Bearer [REDACTED]"
        assert entry["body"]["input"] == [user("hi")]
        assert "sk-secret-value-1234" not in json.dumps(listed)
        assert (await http("GET", root + "/nowhere"))[0] == 404
        assert (await http("POST", root + "/_mock/reset")) == (200, {"ok": True})
        assert (await http("GET", root + "/_mock/requests")) == (200, [])


async def test_wait_requests(mock: MockUpstream) -> None:
    client = client_for(mock.base_url)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(collect, client, request(user("x")))
        with trio.fail_after(5):
            await mock.wait_requests(1)
    assert mock.requests[0].body["input"] == [user("x")]


def test_empty_step_serves_the_echo() -> None:
    message = user("slow please\nmock: {\"ttfb_ms\": 1}")
    assert select(None, [message]).step == Step(ttfb_ms=1.0, text="mock reply to: slow please\nmock: {\"ttfb_ms\": 1}")


async def test_built_in_mock_has_no_inspection_routes() -> None:
    async with open_mock_upstream() as mock:  # as the daemon's provider=mock starts it
        root = mock.base_url.removesuffix("/v1")
        assert (await http("GET", root + "/_mock/requests"))[0] == 404
        assert (await http("POST", root + "/_mock/reset"))[0] == 404
        await collect(client_for(mock.base_url), request(user("secret prompt")))
        assert (await http("GET", root + "/_mock/requests"))[0] == 404


async def test_recorded_requests_are_a_bounded_ring() -> None:
    mock = MockUpstream(max_records=3)
    async with trio.open_nursery() as nursery:
        await nursery.start(mock.serve)
        client = client_for(mock.base_url)
        for n in range(5):
            await collect(client, request(user(f"m{n}")))
        assert [r.body["input"][0]["content"][0]["text"] for r in mock.requests] == ["m2", "m3", "m4"]
        assert mock.app.received == 5
        await mock.wait_requests(5)  # counts every request, not the ring
        nursery.cancel_scope.cancel()


def test_ring_is_bounded_in_bytes_too() -> None:
    from echsd.codex.mock.app import MockApp

    app = MockApp(None, None, max_records=100, max_record_bytes=10_000)
    for n in range(10):
        app._record("POST", "/v1/responses", {}, {"n": n}, 3_000)
    assert len(app.requests) == 3 and app.received == 10 and [r.body["n"] for r in app.requests] == [7, 8, 9]


async def test_malformed_directive_fails_only_its_own_turn(mock: MockUpstream) -> None:
    client = client_for(mock.base_url)
    broken = user("please\nmock: {not json")
    _, error = await collect_until_error(client, request(broken))
    assert error is not None and error.status == 400 and error.upstream_code == "mock_script_error"
    assert "mock directive in user message 1: the 'mock:' line is not valid JSON" in error.message
    later = await collect(client, request(broken, user("and now?")))
    assert text_of(later) == "mock reply to: and now?"
    typo = user('x\nmock: {"txet": "oops"}')
    _, error = await collect_until_error(client, request(typo))
    assert error is not None and "unknown step field 'txet'" in error.message
    assert text_of(await collect(client, request(typo, user("fine?")))) == "mock reply to: fine?"


async def test_a_thread_that_once_used_a_script_gets_plain_replies_later(mock: MockUpstream) -> None:
    client = client_for(mock.base_url)
    script = directive({"steps": [{"text": "one"}, {"text": "two"}]})
    first = await collect(client, request(script))
    history = [script, *first[-1].output]
    assert text_of(await collect(client, request(*history, user("hello again")))) == "mock reply to: hello again"
    # The same history against a fresh server (a daemon restart): still the plain reply.
    async with open_mock_upstream() as fresh:
        assert text_of(await collect(client_for(fresh.base_url), request(*history, user("hi")))) == "mock reply to: hi"


def test_directives_and_rules_carry_endpoint_conditions() -> None:
    from echsd.codex.mock import Conditions

    chosen = select(None, [directive({"endpoint": {"org_verified": False}, "steps": [{"text": "a"}]})])
    assert chosen.step.text == "a" and chosen.conditions == Conditions(org_verified=False)
    beside = select(None, [directive({"endpoint": {"context_window": 99}, "text": "b"})])
    assert beside.step.text == "b" and beside.conditions.context_window == 99
    only = select(None, [user('hi\nmock: {"endpoint": {"org_verified": false}}')])
    assert only.step.text.startswith("mock reply to: hi") and not only.conditions.org_verified
    script = parse_script({
        "endpoint": {"org_verified": False},
        "rules": [{"match": "big", "steps": [{"text": "x"}], "endpoint": {"context_window": 10}}, {"match": "y", "steps": []}],
    })
    assert select(script, [user("a big one")]).conditions == Conditions(org_verified=False, context_window=10)
    assert select(script, [user("nothing")]).conditions == Conditions(org_verified=False)
    for bad, message in [
        ({"endpoint": {"org_verified": "no"}}, "org_verified: expected true or false"),
        ({"endpoint": {"colour": 1}}, "unknown field 'colour'"),
        ({"endpoint": {}, "steps": [], "text": "x"}, "'steps' cannot be mixed with step fields"),
        ({"text": "x", "rate_limits": {"primary": {"used": 1}}}, "unknown field 'used'"),
        (
            {"text": "x", "rate_limits": {"credits": {"has_credits": 1, "unlimited": False}}},
            "'has_credits' and 'unlimited' must be true or false",
        ),
        ({"fault": "usage_limit", "resets_in_seconds": -1}, "expected a non-negative integer"),
        ({"fault": "explode"}, "expected one of drop, error, failed, http, incomplete, invalid_encrypted_content, junk, malformed, stall, usage_limit"),
    ]:
        with pytest.raises(ScriptError, match=message):
            select(None, [directive(bad)])
