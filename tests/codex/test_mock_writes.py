"""How the mock writes a stream: one HTTP chunk per event or per batch, its pace, stamped deltas."""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import urlsplit

import pytest
import trio

from echsd.codex import ItemDone
from echsd.codex.mock import MockUpstream, ScriptError
from echsd.codex.mock.script import parse_step
from tests.codex.helpers import client_for, collect, directive, request, text_of


async def raw_chunks(base_url: str, script: Any) -> list[bytes]:
    """POST a scripted request over a bare socket; the body's HTTP chunks, as framed."""
    url = urlsplit(base_url)
    body = json.dumps({"model": "mock-model", "instructions": "x", "input": [directive(script)], "stream": True}).encode()
    head = f"POST {url.path}/responses HTTP/1.1\r\nHost: {url.netloc}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    stream = await trio.open_tcp_stream(url.hostname, url.port)
    received = bytearray()
    with trio.fail_after(10):
        await stream.send_all(head.encode() + body)
        while data := await stream.receive_some(65536):
            received += data
    await stream.aclose()
    headers, _, rest = bytes(received).partition(b"\r\n\r\n")
    assert b"transfer-encoding: chunked" in headers.lower()
    chunks = []
    while True:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            return chunks
        chunks.append(rest[:size])
        assert rest[size : size + 2] == b"\r\n"
        rest = rest[size + 2 :]


async def test_chunks_event_frames_each_sse_event_as_its_own_chunk(mock: MockUpstream) -> None:
    chunks = await raw_chunks(mock.base_url, {"repeat": {"chunk": "x", "count": 200}, "chunks": "event"})
    assert len(chunks) > 200  # 200 deltas and the events around them
    for chunk in chunks:
        assert chunk.startswith(b"event: ") and chunk.endswith(b"\n\n") and chunk.count(b"\n\n") == 1
    batched = await raw_chunks(mock.base_url, {"repeat": {"chunk": "x", "count": 200}})
    assert len(batched) == 1  # the whole stream fits one 64 KiB batch
    assert batched[0].count(b"\n\n") == len(chunks)


async def test_stamped_deltas_say_when_they_were_written(mock: MockUpstream) -> None:
    client = client_for(mock.base_url)
    before = time.time()
    events = await collect(client, request(directive({"repeat": {"stamp": "time", "count": 5}, "delay_ms": 10})))
    after = time.time()
    text = text_of(events)
    stamps = [float(s) for s in text.split()]
    assert len(stamps) == 5 and stamps == sorted(stamps)
    assert before <= stamps[0] and stamps[-1] <= after
    assert stamps[-1] - stamps[0] >= 0.035  # paced: 4 intervals of 10 ms (minus the timer's slack)
    item = next(e.item for e in events if isinstance(e, ItemDone))
    assert item["content"][0]["text"] == text  # the finished item holds what was streamed


def test_chunks_and_stamp_are_checked() -> None:
    assert parse_step({"text": "a", "chunks": "event"}).chunks == "event"
    assert parse_step({"repeat": {"stamp": "time", "count": 3}}).stamp_time
    for bad in ({"chunks": "each"}, {"chunks": True}, {"repeat": {"stamp": "date", "count": 1}},
                {"repeat": {"stamp": "time", "chunk": "x", "count": 1}}, {"repeat": {"chunk": "x", "count": 1, "every": 2}}):
        with pytest.raises(ScriptError):
            parse_step(bad)
