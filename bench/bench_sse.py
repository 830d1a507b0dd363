"""Model-stream throughput: the sans-IO decoder+reducer alone, and end to end.

``decode_events_per_s``: SSE events per second through ``SseDecoder`` + ``ResponseReducer``
(a rendered stream fed in 16 KiB chunks). ``e2e_deltas_per_s``: text deltas per second
from the in-process mock upstream through ``ResponsesClient`` over loopback HTTP at full
speed (mock and client share one process and core, so this is a floor).
Options: ``--deltas N`` (default 200000).
"""

from __future__ import annotations

import time

import trio

from echsd.codex import Endpoint, ResponsesClient, ResponsesRequest, TextDelta
from echsd.codex.mock import open_mock_upstream
from echsd.codex.mock.render import Renderer
from echsd.codex.mock.script import Step
from echsd.codex.reducer import ResponseReducer
from echsd.codex.sse import SseDecoder

CHUNK = 16 * 1024


def _deltas_option(argv: list[str]) -> int:
    for arg in argv:
        if arg.startswith("--deltas="):
            return int(arg.split("=", 1)[1])
    return 200_000


def bench_decode(deltas: int) -> dict[str, float]:
    renderer = Renderer(Step(repeat=("tok ", deltas)), model="bench", input_tokens=1)
    stream = b"".join(data for _, data in renderer.events())
    events = 0
    started = time.perf_counter()
    decoder, reducer = SseDecoder(), ResponseReducer()
    for offset in range(0, len(stream), CHUNK):
        for sse in decoder.feed(stream[offset : offset + CHUNK]):
            reducer.feed(sse)
            events += 1
    for sse in decoder.close():
        reducer.feed(sse)
        events += 1
    elapsed = time.perf_counter() - started
    assert reducer.completed is not None
    return {"decode_events": events, "decode_mb": round(len(stream) / 1e6, 1), "decode_events_per_s": round(events / elapsed)}


async def bench_end_to_end(deltas: int) -> dict[str, float]:
    async with open_mock_upstream() as mock:
        client = ResponsesClient(Endpoint(mock.base_url))
        step = f'{{"repeat": {{"chunk": "tok ", "count": {deltas}}}}}'
        request = ResponsesRequest(model="bench", instructions="", input=[{"role": "user", "content": "mock: " + step}])
        seen = 0
        started = time.perf_counter()
        async with client.stream(request) as events:
            async for event in events:
                if isinstance(event, TextDelta):
                    seen += 1
        elapsed = time.perf_counter() - started
        await client.aclose()
    assert seen == deltas
    return {"e2e_deltas": seen, "e2e_s": round(elapsed, 3), "e2e_deltas_per_s": round(seen / elapsed)}


def main(argv: list[str]) -> dict:
    deltas = _deltas_option(argv)
    result: dict = bench_decode(deltas)
    result.update(trio.run(bench_end_to_end, deltas))
    return result

