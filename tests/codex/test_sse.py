"""The sans-IO SSE decoder."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from echsd.codex.sse import SseDecoder, SseEvent


def decode(*chunks: bytes) -> list[SseEvent]:
    decoder = SseDecoder()
    events = [e for chunk in chunks for e in decoder.feed(chunk)]
    return events + decoder.close()


def test_basic_event_and_default_name() -> None:
    assert decode(b"event: a\ndata: {}\n\ndata: x\n\n") == [SseEvent("a", b"{}"), SseEvent("message", b"x")]


def test_crlf_cr_and_split_line_endings() -> None:
    expected = [SseEvent("a", b"1"), SseEvent("b", b"2"), SseEvent("c", b"3")]
    assert decode(b"event: a\r\ndata: 1\r\n\r\nevent: b\rdata: 2\r\revent: c\ndata: 3\n\n") == expected
    assert decode(b"event: a\r", b"\ndata: 1\r", b"\n\r", b"\nevent: b\rdata: 2\r\revent: c\ndata: 3\n\n") == expected


def test_comments_multiline_data_and_field_rules() -> None:
    stream = b": keep-alive\ndata: line one\ndata:line two\ndata\nid: 7\nretry: 10\nfoo: bar\n\n"
    assert decode(stream) == [SseEvent("message", b"line one\nline two\n")]


def test_event_without_data_is_not_dispatched() -> None:
    assert decode(b"event: ping\n\ndata: [DONE]\n\n") == [SseEvent("message", b"[DONE]")]


def test_last_event_without_blank_line_is_kept_at_close() -> None:
    assert decode(b"data: a\n\ndata: b") == [SseEvent("message", b"a"), SseEvent("message", b"b")]


def test_only_one_space_after_colon_is_dropped() -> None:
    assert decode(b"data:  two\n\n") == [SseEvent("message", b" two")]


_line = st.one_of(
    st.builds(lambda v: b"data: " + v, st.binary(max_size=20).filter(lambda b: b"\n" not in b and b"\r" not in b)),
    st.sampled_from([b"event: x", b"event: response.output_text.delta", b": comment", b"", b"id: 1", b"data"]),
)


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(_line, max_size=30), ending=st.sampled_from([b"\n", b"\r\n", b"\r"]), cuts=st.lists(st.integers(0, 2000), max_size=20))
def test_any_chunking_and_line_ending_decodes_the_same(lines: list[bytes], ending: bytes, cuts: list[int]) -> None:
    reference = decode(b"".join(line + b"\n" for line in lines))
    stream = b"".join(line + ending for line in lines)
    points = sorted({min(c, len(stream)) for c in cuts})
    chunks = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)])]
    assert decode(*chunks) == reference


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=64), max_size=20))
def test_garbage_never_raises(chunks: list[bytes]) -> None:
    for event in decode(*chunks):
        assert isinstance(event.data, bytes) and isinstance(event.event, str)


@pytest.mark.parametrize("piece", [1, 7, 65536])
def test_a_long_event_in_many_chunks_with_events_around_it(piece: int) -> None:
    """The pending text of a long event is joined once its blank line comes, also when
    the blank line straddles two chunks; what follows it in the same chunk is decoded too."""
    long = b"x" * 300_000
    stream = b"data: a\n\nevent: big\ndata: " + long + b"\n\ndata: b\n\ndata: c"
    decoder = SseDecoder()
    out = []
    for start in range(0, len(stream), piece):
        out += decoder.feed(stream[start : start + piece])
    out += decoder.close()
    assert out == [SseEvent("message", b"a"), SseEvent("big", long), SseEvent("message", b"b"), SseEvent("message", b"c")]
