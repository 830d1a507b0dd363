"""ResponsesClient against the mock upstream over real HTTP: replies, calls, request bodies."""

from __future__ import annotations

import orjson
import trio

from echsd.codex import (
    ArgumentsDelta,
    BadModelRequest,
    Completed,
    ItemAdded,
    ItemDone,
    ReasoningDelta,
    TextDelta,
    Usage,
)
from echsd.codex.mock import MockUpstream
from tests.codex.helpers import (
    client_for,
    collect,
    collect_until_error,
    directive,
    request,
    text_of,
    user,
)


async def test_plain_reply_streams_text_and_completes(mock: MockUpstream) -> None:
    client = client_for(mock.base_url)
    events = await collect(client, request(user("hello there")))
    assert text_of(events) == "mock reply to: hello there"
    assert sum(isinstance(e, TextDelta) for e in events) > 1
    assert isinstance(events[0], ItemAdded)
    completed = events[-1]
    assert isinstance(completed, Completed) and completed.usage.input_tokens > 0
    assert completed.output == [
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "mock reply to: hello there"}]}
    ]
    await client.aclose()


async def test_request_body_fields(mock: MockUpstream) -> None:
    tool = {"type": "function", "name": "read_file", "description": "read", "parameters": {"type": "object"}, "strict": False}
    req = request(user("hi"), tools=[tool], reasoning_effort="high", prompt_cache_key="thr_1", parallel_tool_calls=False)
    client = client_for(mock.base_url)
    await collect(client, req)
    body = mock.requests[0].body
    assert body["tools"] == [tool] and body["tool_choice"] == "auto" and body["parallel_tool_calls"] is False
    assert body["store"] is False and body["stream"] is True
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["reasoning"] == {"effort": "high", "summary": "auto"}
    assert body["prompt_cache_key"] == "thr_1"
    assert body["instructions"] == "be brief" and body["model"] == "mock-model"
    assert mock.requests[0].path == "/v1/responses"
    assert mock.requests[0].headers["accept"] == "text/event-stream"
    await collect(client, request(user("hi")))
    assert "reasoning" not in mock.requests[1].body and "prompt_cache_key" not in mock.requests[1].body
    await client.aclose()


async def test_single_function_call_then_next_step(mock: MockUpstream) -> None:
    script = {"steps": [{"calls": [{"name": "exec", "arguments": {"cmd": "ls"}, "call_id": "call_a"}]}, {"text": "all done"}]}
    client = client_for(mock.base_url)
    first = await collect(client, request(directive(script)))
    call = [e for e in first if isinstance(e, ItemDone)][0]
    assert call.item == {"type": "function_call", "call_id": "call_a", "name": "exec", "arguments": '{"cmd":"ls"}'}
    pieces = [e.delta for e in first if isinstance(e, ArgumentsDelta)]
    assert len(pieces) > 1 and "".join(pieces) == '{"cmd":"ls"}'
    history = [directive(script), *first[-1].output, {"type": "function_call_output", "call_id": "call_a", "output": "a b"}]
    second = await collect(client, request(*history))
    assert text_of(second) == "all done"
    after = await collect(client, request(*history, *second[-1].output, {"type": "function_call_output", "call_id": "x", "output": ""}))
    assert text_of(after) == "done"  # the script ran out, and no new message came
    third = await collect(client, request(*history, *second[-1].output, user("more?")))
    assert text_of(third) == "mock reply to: more?"  # a later plain message gets the plain reply
    await client.aclose()


async def test_parallel_calls_reassemble_per_item(mock: MockUpstream) -> None:
    calls = [{"name": "a", "arguments": {"n": 1}}, {"name": "b", "arguments": {"n": 22}}, {"name": "c", "arguments": "{broken"}]
    client = client_for(mock.base_url)
    events = await collect(client, request(directive({"text": "running three", "calls": calls})))
    done = [e for e in events if isinstance(e, ItemDone) and e.item["type"] == "function_call"]
    assert [d.item["name"] for d in done] == ["a", "b", "c"]
    assert len({d.item["call_id"] for d in done}) == 3
    for d in done:
        assert "".join(e.delta for e in events if isinstance(e, ArgumentsDelta) and e.item_id == d.item_id) == d.item["arguments"]
    assert orjson.loads(done[1].item["arguments"]) == {"n": 22} and done[2].item["arguments"] == "{broken"
    assert [i["type"] for i in events[-1].output] == ["message", "function_call", "function_call", "function_call"]
    await client.aclose()


async def test_reasoning_summary_and_usage_override(mock: MockUpstream) -> None:
    step = {"reasoning": "let me think", "text": "42", "usage": {"input_tokens": 1000, "cached_tokens": 900, "output_tokens": 50, "reasoning_tokens": 30}}
    client = client_for(mock.base_url)
    events = await collect(client, request(directive(step)))
    assert "".join(e.delta for e in events if isinstance(e, ReasoningDelta)) == "let me think"
    reasoning = events[-1].output[0]
    assert reasoning["type"] == "reasoning" and reasoning["encrypted_content"] and "id" not in reasoning
    assert events[-1].usage == Usage(1000, 900, 50, 30)
    await client.aclose()


async def test_repeat_streams_many_identical_deltas(mock: MockUpstream) -> None:
    client = client_for(mock.base_url)
    events = await collect(client, request(directive({"repeat": {"chunk": "ab", "count": 5000}})))
    deltas = [e for e in events if isinstance(e, TextDelta)]
    assert len(deltas) == 5000 and {d.delta for d in deltas} == {"ab"}
    await client.aclose()


async def test_delays_pace_the_deltas(mock: MockUpstream) -> None:
    client = client_for(mock.base_url)
    start = trio.current_time()
    events = await collect(client, request(directive({"text": "a b c d", "delay_ms": 30})))
    assert text_of(events) == "a b c d"
    assert trio.current_time() - start >= 0.09


async def test_bad_directive_is_a_bad_request(mock: MockUpstream) -> None:
    client = client_for(mock.base_url)
    _, error = await collect_until_error(client, request(user("mock: {not json")))
    assert isinstance(error, BadModelRequest) and "not valid JSON" in error.message
    assert len(mock.requests) == 1
    await client.aclose()


async def test_compact_returns_replacement_items(mock: MockUpstream) -> None:
    client = client_for(mock.base_url)
    history = [user("first"), {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "x"}]}, user("second")]
    items = await client.compact(model="mock-model", instructions="summarise", input=history)
    assert items[:2] == [history[0], history[2]]
    assert items[2]["type"] == "compaction" and items[2]["encrypted_content"]
    assert mock.requests[0].path == "/v1/responses/compact"
    assert mock.requests[0].body == {"model": "mock-model", "instructions": "summarise", "input": history}
    await client.aclose()


async def test_concurrent_streams_share_one_client(mock: MockUpstream) -> None:
    client = client_for(mock.base_url)
    replies: dict[int, str] = {}

    async def one(n: int) -> None:
        replies[n] = text_of(await collect(client, request(directive({"text": f"reply {n} here", "delay_ms": 5}))))

    async with trio.open_nursery() as nursery:
        for n in range(20):
            nursery.start_soon(one, n)
    assert replies == {n: f"reply {n} here" for n in range(20)}
    await client.aclose()
