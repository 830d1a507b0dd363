"""What the endpoint says reaches the thread: retries as ``turn.retry``, a stream broken after
output requested again without its partial output, rate limits reported, reasoning of another
model left out, usage priced from the catalog. (A refused summary: ``test_endpoint_memory.py``.)"""

from __future__ import annotations

from typing import Any

from tests.helpers import Watch, check_thread_invariants, conversation, mock_directive


async def run(daemon: Any, tid: str, script: Any) -> Watch:
    async with Watch(daemon, tid) as watch:
        before = watch.last_seq  # the end of an earlier turn is not this one's
        await daemon.ops.send(tid, mock_directive(script))
        await watch.wait_for(lambda e: e.type in ("turn.completed", "turn.error"), after_seq=before)
    return watch


async def test_retries_are_announced(daemon: Any, workdir: Any) -> None:
    tid = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    watch = await run(daemon, tid, {"text": "made it", "fault": "http", "status": 503, "retry_after": 0, "times": 2})
    retries = [e.data for e in watch.of_type("turn.retry")]
    assert [r["attempt"] for r in retries] == [1, 2] and all(r["delay_s"] == 0 for r in retries)
    assert retries[0]["max_retries"] == daemon.settings.tuning.max_retries and "503" in retries[0]["reason"]
    assert watch.of_type("turn.completed")[0].data["final_text"] == "made it"


async def test_a_stream_broken_after_output_is_requested_again(daemon: Any, workdir: Any, mock_upstream: Any) -> None:
    tid = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    script = {"reasoning": "thinking it over", "text": "one two three four", "fault": "drop", "after_deltas": 6, "times": 1}
    watch = await run(daemon, tid, script)
    assert watch.of_type("turn.completed")[0].data["final_text"] == "one two three four"
    pruned = watch.of_type("history.pruned")
    assert len(pruned) == 1 and pruned[0].data["items_after"] == pruned[0].data["items_before"] - 1  # the reasoning item
    assert [e.data["attempt"] for e in watch.of_type("turn.retry")] == [1]
    history = conversation(await daemon.ops.history(tid))
    assert [item["type"] for item in history] == ["message", "reasoning", "message"]  # user, then one whole response
    retried = conversation(mock_upstream.requests[-1].body["input"])
    assert [item["type"] for item in retried] == ["message"]  # the partial output was not sent back
    await check_thread_invariants(daemon, tid)


async def test_rate_limits_are_reported(daemon: Any, workdir: Any) -> None:
    tid = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    limits = {"primary": {"used_percent": 42, "window_minutes": 300, "resets_in_seconds": 600}}
    watch = await run(daemon, tid, {"text": "ok", "rate_limits": limits})
    reported = watch.of_type("account.rate_limits")[0].data["limits"]
    assert reported[0]["primary"]["used_percent"] == 42 and reported[0]["primary"]["window_minutes"] == 300
    status = await daemon.ops.status()
    assert status["rate_limits"]["limits"][0]["primary"]["used_percent"] == 42


async def test_changing_the_model_leaves_its_reasoning_out(daemon: Any, workdir: Any, mock_upstream: Any) -> None:
    tid = (await daemon.ops.create_thread(cwd=str(workdir), model="gpt-5.5"))["thread_id"]
    await run(daemon, tid, {"reasoning": "deep thoughts", "text": "first"})
    assert "reasoning" in [item["type"] for item in await daemon.ops.history(tid)]
    async with Watch(daemon, tid) as watch:
        await daemon.ops.configure(tid, {"model": "gpt-5.4"})
        pruned = await watch.wait_type("history.pruned")
    assert pruned.data["items_after"] == pruned.data["items_before"] - 1
    await run(daemon, tid, {"text": "second"})
    sent = mock_upstream.requests[-1].body
    assert sent["model"] == "gpt-5.4" and "reasoning" not in [item["type"] for item in sent["input"]]


async def test_usage_is_priced_from_the_catalog(daemon: Any, workdir: Any) -> None:
    catalog = daemon.settings.catalog
    tid = (await daemon.ops.create_thread(cwd=str(workdir), model="gpt-5.5"))["thread_id"]
    usage = {"input_tokens": 1_000_000, "cached_tokens": 0, "output_tokens": 1_000_000}
    watch = await run(daemon, tid, {"text": "priced", "usage": usage})
    expected = catalog.estimate_cost("gpt-5.5", input_tokens=1_000_000, cached_tokens=0, output_tokens=1_000_000)
    assert expected and expected > 0
    turn_usage = watch.of_type("turn.usage")[0].data
    assert abs(turn_usage["cost_usd"] - expected) < 1e-9
    assert abs((await daemon.ops.get_thread(tid))["usage"]["cost_usd"] - expected) < 1e-9
    assert abs((await daemon.ops.status())["usage"]["cost_usd"] - expected) < 1e-9


async def test_a_model_that_does_not_reason_gets_no_reasoning_fields(daemon: Any, workdir: Any, mock_upstream: Any) -> None:
    tid = (await daemon.ops.create_thread(cwd=str(workdir), model="gpt-4.1"))["thread_id"]
    await run(daemon, tid, {"text": "plain"})
    body = mock_upstream.requests[-1].body
    assert "reasoning" not in body and "include" not in body and body["model"] == "gpt-4.1"
    headers = mock_upstream.requests[-1].headers
    assert headers["session-id"] == headers["thread-id"] == tid
