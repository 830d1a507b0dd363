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
from echsd.codex.mock.script import Step, parse_step, segment_rounds, select
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
    assert select(None, [script, CALL, OUTPUT, ASSISTANT, user("next")]).step.text == "done"
    # The last directive wins and counts from itself.
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
    script = directive({"steps": [{"text": "zero"}, {"text": "one"}, {"text": "two"}]})
    history: list[dict] = [script]
    for expected in ("zero", "one"):
        events = await collect(client, request(*history))
        assert text_of(events) == expected
        history += [e.item for e in events if isinstance(e, ItemDone)] + [user("go on")]
    compacted = await client.compact(model="m", instructions="", input=history)
    assert [i.get("role") for i in compacted[:-1]] == ["user", "user", "user"]
    assert text_of(await collect(client, request(*compacted))) == "two"


async def test_introspection_routes_redact_credentials() -> None:
    async with open_mock_upstream() as mock:
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
