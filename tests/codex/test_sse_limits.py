"""An SSE event may not grow without bound: past ``MAX_EVENT_BYTES`` the stream is broken."""

from __future__ import annotations

import pytest

from echsd.codex import StreamBroken
from echsd.codex import sse
from echsd.codex.mock import MockUpstream
from echsd.codex.sse import SseDecoder, SseEvent, SseTooLarge
from tests.codex.helpers import client_for, collect_until_error, directive, request


def test_an_event_past_the_limit_raises_however_it_arrives(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sse, "MAX_EVENT_BYTES", 1000)
    decoder = SseDecoder()
    assert decoder.feed(b"data: " + b"x" * 900 + b"\n\n") == [SseEvent("message", b"x" * 900)]
    with pytest.raises(SseTooLarge):
        for _ in range(200):
            decoder.feed(b"data: " + b"y" * 10)  # no blank line: it all waits


async def test_the_client_reports_it_as_a_broken_stream(mock: MockUpstream, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sse, "MAX_EVENT_BYTES", 2000)
    client = client_for(mock.base_url, max_retries=0)
    events, error = await collect_until_error(client, request(directive({"text": "z" * 5000, "deltas": 1})))
    assert isinstance(error, StreamBroken) and "longer than 2,000 bytes" in error.message
