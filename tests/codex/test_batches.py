"""``events.batches()``: the same events as ``async for``, in lists, one per receive, with
the text deltas of one item that came together joined."""

from __future__ import annotations

import trio

from echsd.codex import Completed, ItemDone, ReasoningDelta, ResponseFailed, TextDelta
from echsd.codex.client import coalesced
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


async def test_a_burst_comes_in_few_batches_its_deltas_joined(mock: MockUpstream) -> None:
    script = {"repeat": {"chunk": "x", "count": 300}, "chunks": "event"}
    burst, error = await batches_of(mock, script)
    flat = [event for batch in burst for event in batch]
    assert error is None and isinstance(flat[-1], Completed)
    assert len(burst) < 30  # what arrived together is handed over together
    joined = [e for e in flat if isinstance(e, TextDelta)]
    assert "".join(e.delta for e in joined) == "x" * 300 and len(joined) <= len(burst)
    one_by_one = await collect(client_for(mock.base_url), request(directive(script)))  # async for: every delta alone
    assert [e.delta for e in one_by_one if isinstance(e, TextDelta)] == ["x"] * 300
    assert [type(e) for e in flat if not isinstance(e, TextDelta)] == [type(e) for e in one_by_one if not isinstance(e, TextDelta)]


async def test_deltas_that_come_one_at_a_time_are_handed_over_one_at_a_time(mock: MockUpstream) -> None:
    paced, _ = await batches_of(mock, {"repeat": {"chunk": "y", "count": 5}, "delay_ms": 30})
    deltas = [[e.delta for e in b if isinstance(e, TextDelta)] for b in paced]
    assert [d for d in deltas if d][1:-1] == [["y"]] * 3  # no waiting for more: each as it came


async def test_the_events_before_a_failure_come_first(mock: MockUpstream) -> None:
    batches, error = await batches_of(mock, {"text": "a b c", "fault": "failed", "code": "invalid_prompt", "after_deltas": 2})
    text = "".join(e.delta for batch in batches for e in batch if isinstance(e, TextDelta))
    assert text == "a b " and isinstance(error, ResponseFailed)


def test_runs_of_one_items_deltas_are_joined_and_nothing_else() -> None:
    batch = [
        TextDelta("a", 0, "x"), TextDelta("a", 0, "y"), ReasoningDelta("r", 0, "1"), ReasoningDelta("r", 0, "2"),
        TextDelta("b", 1, "z"), TextDelta("a", 0, "w"), ItemDone(0, {}, "a"), TextDelta("a", 0, "q"), TextDelta("a", 0, "r"),
    ]
    assert coalesced(batch) == [
        TextDelta("a", 0, "xy"), ReasoningDelta("r", 0, "12"), TextDelta("b", 1, "z"), TextDelta("a", 0, "w"), ItemDone(0, {}, "a"), TextDelta("a", 0, "qr"),
    ]
    assert [type(e) for e in coalesced(batch)] == [TextDelta, ReasoningDelta, TextDelta, TextDelta, ItemDone, TextDelta]
