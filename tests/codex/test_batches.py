"""``events.batches()``: the same events as ``async for``, in lists, one per receive."""

from __future__ import annotations

import trio

from echsd.codex import Completed, ResponseFailed, TextDelta
from echsd.codex.mock import MockUpstream
from tests.codex.helpers import client_for, collect, directive, request


async def batches_of(mock: MockUpstream, script: dict) -> tuple[list[list], Exception | None]:
    client = client_for(mock.base_url, max_retries=0)
    out: list[list] = []
    with trio.fail_after(10):
        try:
            async with client.stream(request(directive(script))) as events:
                async for batch in events.batches():
                    out.append(batch)
        except Exception as exc:  # noqa: BLE001 - the test inspects it
            return out, exc
    return out, None


async def test_a_burst_comes_in_few_batches_and_a_paced_stream_one_delta_each(mock: MockUpstream) -> None:
    burst, error = await batches_of(mock, {"repeat": {"chunk": "x", "count": 300}, "chunks": "event"})
    flat = [event for batch in burst for event in batch]
    assert error is None and sum(isinstance(e, TextDelta) for e in flat) == 300 and isinstance(flat[-1], Completed)
    assert len(burst) < 30  # what arrived together is handed over together
    one_by_one = await collect(client_for(mock.base_url), request(directive({"repeat": {"chunk": "x", "count": 300}, "chunks": "event"})))
    assert [(type(e), getattr(e, "delta", None)) for e in flat] == [(type(e), getattr(e, "delta", None)) for e in one_by_one]
    paced, _ = await batches_of(mock, {"repeat": {"chunk": "y", "count": 5}, "delay_ms": 30})
    assert [[type(e) for e in b] for b in paced if any(isinstance(e, TextDelta) for e in b)][1:-1] == [[TextDelta]] * 3


async def test_the_events_before_a_failure_come_first(mock: MockUpstream) -> None:
    batches, error = await batches_of(mock, {"text": "a b c", "fault": "failed", "code": "invalid_prompt", "after_deltas": 2})
    deltas = [e.delta for batch in batches for e in batch if isinstance(e, TextDelta)]
    assert deltas == ["a ", "b "] and isinstance(error, ResponseFailed)
