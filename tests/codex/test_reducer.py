"""The sans-IO reducer (fed by the decoder), with streams rendered by the mock upstream."""

from __future__ import annotations

import json

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from echsd.codex import (
    ArgumentsDelta,
    Completed,
    ContextWindowExceeded,
    ItemAdded,
    ItemDone,
    ModelError,
    RateLimited,
    RateLimitsUpdated,
    ReasoningDelta,
    ResponseFailed,
    ResponseIncomplete,
    StreamBroken,
    TextDelta,
    Usage,
    UsageLimitReached,
)
from echsd.codex.mock.render import Renderer
from echsd.codex.mock.script import Call, Fault, Step
from echsd.codex.reducer import ResponseReducer, as_input_item
from echsd.codex.sse import SseDecoder


def run(*chunks: bytes) -> tuple[list, ModelError | None]:
    """Decoder + reducer exactly as the client drives them."""
    decoder, reducer, events = SseDecoder(), ResponseReducer(), []
    try:
        for chunk in [*chunks, b""]:
            for sse in decoder.feed(chunk) if chunk else decoder.close():
                event = reducer.feed(sse)
                if event is not None:
                    events.append(event)
                    if reducer.completed is not None:
                        return events, None
        reducer.finish()
    except ModelError as exc:
        return events, exc
    return events, None


def render(step: Step, fault: Fault | None = None) -> bytes:
    renderer = Renderer(step, model="m", input_tokens=10)
    out = b""
    for kind, data in renderer.events():
        if kind == 2 and fault is not None:
            return out + renderer.fault_event(fault)
        out += data
    return out


def sse(payload: dict) -> bytes:
    return b"event: " + payload["type"].encode() + b"\ndata: " + orjson.dumps(payload) + b"\n\n"


def test_text_reasoning_and_calls_in_order() -> None:
    step = Step(text="hi there", reasoning="think", calls=(Call("f", '{"a": 1}', "call_1"), Call("g", "{}")))
    events, error = run(render(step))
    assert error is None
    kinds = [type(e) for e in events]
    assert kinds[0] is ItemAdded and kinds[-1] is Completed
    assert "".join(e.delta for e in events if isinstance(e, TextDelta)) == "hi there"
    assert "".join(e.delta for e in events if isinstance(e, ReasoningDelta)) == "think"
    done = [e for e in events if isinstance(e, ItemDone)]
    assert [d.item["type"] for d in done] == ["reasoning", "message", "function_call", "function_call"]
    call = done[2]
    assert call.item == {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": '{"a": 1}'}
    assert call.item_id.startswith("fc_")
    assert "".join(e.delta for e in events if isinstance(e, ArgumentsDelta) and e.item_id == call.item_id) == '{"a": 1}'
    assert done[0].item["encrypted_content"]
    completed = events[-1]
    assert completed.output == [d.item for d in done]
    assert completed.response_id.startswith("resp_")


def test_items_are_returned_in_input_shape() -> None:
    item = {
        "id": "msg_1", "type": "message", "status": "completed", "role": "assistant",
        "content": [{"type": "output_text", "text": "x", "annotations": [], "logprobs": []}],
    }
    assert as_input_item(item) == {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "x"}]}
    assert as_input_item({"type": "function_call_output", "call_id": "c", "output": "o"})["output"] == "o"


def test_usage_is_read_from_completed() -> None:
    completed = {
        "type": "response.completed",
        "response": {"id": "r", "output": [], "usage": {
            "input_tokens": 100, "input_tokens_details": {"cached_tokens": 40},
            "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 5}, "total_tokens": 120,
        }},
    }
    events, error = run(sse(completed))
    assert error is None and events == [Completed("r", Usage(100, 40, 20, 5), [])]


def test_output_comes_from_completed_when_no_item_done_events() -> None:
    item = {"id": "msg_1", "type": "message", "role": "assistant", "content": []}
    events, _ = run(sse({"type": "response.completed", "response": {"id": "r", "output": [item]}}))
    assert events[0].output == [{"type": "message", "role": "assistant", "content": []}]


def test_arguments_missing_from_done_item_are_reassembled() -> None:
    stream = b"".join([
        sse({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 0, "delta": '{"x"'}),
        sse({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 0, "delta": ": 2}"}),
        sse({"type": "response.output_item.done", "output_index": 0, "item": {"id": "fc_1", "type": "function_call", "call_id": "c", "name": "f"}}),
        sse({"type": "response.completed", "response": {"id": "r"}}),
    ])
    events, _ = run(stream)
    assert events[-1].output[0]["arguments"] == '{"x": 2}'


def test_unknown_events_and_done_marker_are_ignored_and_completed_ends() -> None:
    stream = sse({"type": "response.something_new", "x": 1}) + b"data: [DONE]\n\n" + sse(
        {"type": "response.completed", "response": {"id": "r"}}
    ) + b"data: not json after the end\n\n"
    events, error = run(stream)
    assert error is None and [type(e) for e in events] == [Completed]


def test_event_name_is_used_when_type_is_missing() -> None:
    events, _ = run(b'event: response.completed\ndata: {"response": {"id": "r"}}\n\n')
    assert events[0].response_id == "r"


@pytest.mark.parametrize(
    ("payload", "expected", "code"),
    [
        ({"type": "response.failed", "response": {"error": {"code": "context_length_exceeded", "message": "too long"}}}, ContextWindowExceeded, "context_window_exceeded"),
        ({"type": "response.failed", "response": {"error": {"code": "insufficient_quota", "message": "no"}}}, UsageLimitReached, "usage_limit"),
        ({"type": "response.failed", "response": {"error": {"code": "invalid_prompt", "message": "bad prompt"}}}, ResponseFailed, "response_failed"),
        ({"type": "error", "code": "rate_limit_exceeded", "message": "Please try again in 1.5s", "param": None}, RateLimited, "rate_limited"),
        ({"type": "error", "error": {"code": "usage_limit_reached", "message": "plan limit"}}, UsageLimitReached, "usage_limit"),
        ({"type": "error", "code": "context_length_exceeded", "message": "x"}, ContextWindowExceeded, "context_window_exceeded"),
    ],
)
def test_error_events_map_to_typed_errors(payload: dict, expected: type, code: str) -> None:
    _, error = run(sse(payload))
    assert type(error) is expected and error.code == code


def test_rate_limit_event_carries_the_delay_and_server_error_is_transient() -> None:
    _, error = run(sse({"type": "error", "code": "rate_limit_exceeded", "message": "Please try again in 1.5s"}))
    assert error.retry_after == 1.5 and error.retryable
    _, error = run(sse({"type": "response.failed", "response": {"error": {"code": "server_error", "message": "oops"}}}))
    assert isinstance(error, ResponseFailed) and error.retryable and error.upstream_code == "server_error"


def test_incomplete_carries_reason_and_partial_output() -> None:
    step = Step(text="partial answer")
    renderer = Renderer(step, model="m", input_tokens=1)
    stream = b"".join(data for kind, data in renderer.events() if b"response.completed" not in data)
    stream += renderer.fault_event(Fault("incomplete", reason="max_output_tokens"))
    events, error = run(stream)
    assert isinstance(error, ResponseIncomplete) and error.reason == "max_output_tokens"
    assert error.output[0]["content"][0]["text"] == "partial answer"


@pytest.mark.parametrize(
    "stream",
    [
        b"data: {not json\n\n",  # skipped, then the stream ends without response.completed
        b"data: [1, 2]\n\n",
        sse({"type": "response.output_text.delta", "item_id": 5, "delta": "x"}),
        sse({"type": "response.output_text.delta", "item_id": "m", "output_index": "0", "delta": "x"}),
        sse({"type": "response.output_item.added", "output_index": 0, "item": "nope"}),
        sse({"type": "response.completed", "response": None}),
        sse({"type": "response.created", "response": {"id": "r"}}),  # ends without response.completed
    ],
)
def test_malformed_or_cut_streams_are_stream_broken(stream: bytes) -> None:
    _, error = run(stream)
    assert isinstance(error, StreamBroken)


def test_non_json_lines_are_skipped_and_counted() -> None:
    good = render(Step(text="a b"))
    head, tail = good.split(b"event: response.output_item.added", 1)
    events, error = run(head, b"data: {not json\n\n", b"data: 42\n\n", b"event: response.output_item.added" + tail)
    assert error is None and isinstance(events[-1], Completed)
    assert "".join(e.delta for e in events if isinstance(e, TextDelta)) == "a b"
    reducer = ResponseReducer()
    for sse_event in SseDecoder().feed(b"data: {not json\n\ndata: [1]\n\n"):
        assert reducer.feed(sse_event) is None
    assert reducer.skipped == 2


def test_long_events_that_repeat_what_was_streamed_are_not_parsed() -> None:
    """A long ``function_call_arguments.done`` (megabytes, repeating the deltas) is dropped
    unparsed: here it is cut short, and still not counted as a bad line. Short, or opening
    with another key, it is parsed (and this one counted)."""
    arguments = json.dumps({"cmd": "echo " + "A" * 200_000})
    cut = b'{"type":"response.function_call_arguments.done","arguments":' + orjson.dumps(arguments)[:-5]
    step = Step(calls=[Call("exec_command", arguments)])
    head, tail = render(step).split(b"event: response.output_item.done", 1)
    events, error = run(head, b"data: " + cut + b"\n\n", b"event: response.output_item.done" + tail)
    assert error is None and isinstance(events[-1], Completed)
    assert events[-1].output[0]["arguments"] == arguments
    for data, skipped in ((cut, 0), (cut[:1000], 1), (b'{"item_id":"x",' + cut[1:], 1)):
        reducer = ResponseReducer()
        [event] = SseDecoder().feed(b"data: " + data + b"\n\n")
        assert reducer.feed(event) is None and reducer.skipped == skipped


def test_the_unparsed_kinds_are_ones_the_reducer_ignores() -> None:
    from echsd.codex import reducer

    assert not set(reducer._UNUSED_KINDS) & set(reducer._HANDLERS)


def test_rate_limits_event_becomes_a_notice() -> None:
    payload = {"type": "codex.rate_limits", "rate_limits": {"primary": {"used_percent": 3.5, "window_minutes": 60}}}
    events, error = run(sse(payload), render(Step(text="ok")))
    assert error is None and isinstance(events[0], RateLimitsUpdated)
    assert events[0].limits[0].primary is not None and events[0].limits[0].primary.used_percent == 3.5


_steps = st.builds(
    Step,
    text=st.one_of(st.none(), st.text(max_size=40)),
    reasoning=st.one_of(st.none(), st.text(max_size=20)),
    calls=st.lists(
        st.builds(Call, name=st.sampled_from(["f", "g"]), arguments=st.text(max_size=20), call_id=st.none()), max_size=3
    ).map(tuple),
    deltas=st.one_of(st.none(), st.integers(1, 5)),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(step=_steps, cuts=st.lists(st.integers(0, 5000), max_size=25), crlf=st.booleans())
def test_any_chunking_gives_the_same_events(step: Step, cuts: list[int], crlf: bool) -> None:
    stream = render(step)
    reference, error = run(stream)
    assert error is None and isinstance(reference[-1], Completed)
    if crlf:
        stream = stream.replace(b"\n", b"\r\n")
    points = sorted({min(c, len(stream)) for c in cuts})
    chunks = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)])]
    assert run(*chunks) == (reference, None)
    assert "".join(e.delta for e in reference if isinstance(e, TextDelta)) == (step.text or "")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=80), max_size=10))
def test_garbage_bytes_only_raise_stream_broken(chunks: list[bytes]) -> None:
    _, error = run(*chunks)
    assert isinstance(error, StreamBroken)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=6,
)
_event_types = st.sampled_from(
    ["response.created", "response.output_item.added", "response.output_item.done", "response.output_text.delta",
     "response.reasoning_summary_text.delta", "response.function_call_arguments.delta", "response.completed",
     "response.failed", "response.incomplete", "error", "response.unknown"]
)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_event_types, st.dictionaries(st.sampled_from(
    ["item_id", "output_index", "delta", "item", "response", "code", "message", "error"]), _json, max_size=5)), max_size=6))
def test_wrongly_shaped_events_only_raise_model_errors(events: list[tuple[str, dict]]) -> None:
    stream = b"".join(b"data: " + json.dumps({**fields, "type": kind}).encode() + b"\n\n" for kind, fields in events)
    _, error = run(stream)
    assert error is None or isinstance(error, ModelError)
