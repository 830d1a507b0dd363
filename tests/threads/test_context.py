"""Context management through the real loop: compaction at the model's threshold, after the
endpoint refuses a request as too long (then the turn completes), and no loop when nothing
real can be compacted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, AsyncIterator

import pytest
import trio

from tests.helpers import Watch, check_thread_invariants, mock_directive
from tests.wire.helpers import start_daemon, stop_daemon

BRIEF = "Answer briefly."  # instructions of a known size: the windows below are small
LONG_REPLY = {"repeat": {"chunk": "lorem ipsum ", "count": 400}}  # ~4,800 characters from a short directive


@pytest.fixture
async def small_window(tmp_path: Path, mock_upstream: Any, nursery: trio.Nursery) -> AsyncIterator[Any]:
    """A daemon whose catalog gives mock-model a 2,000-token window (compaction at 1,700)."""
    state = tmp_path / "state"
    state.mkdir()
    (state / "config.toml").write_text('[models."mock-model"]\ncontext_window = 2000\n')
    daemon = await start_daemon(nursery, state, mock_upstream.base_url, tcp=False)
    yield daemon
    await stop_daemon(daemon)


async def turn(daemon: Any, tid: str, text: str, script: Any) -> Watch:
    async with Watch(daemon, tid) as watch:
        before = watch.last_seq
        await daemon.ops.send(tid, f"{text}\n" + mock_directive(script))
        await watch.wait_for(lambda e: e.seq > before and e.type in ("turn.completed", "turn.error"))
    return watch


def compactions(watch: Watch) -> list[dict[str, Any]]:
    return [e.data for e in watch.of_type("thread.compacted")]


async def test_compaction_at_the_threshold(small_window: Any, workdir: Path, mock_upstream: Any) -> None:
    daemon = small_window
    tid = (await daemon.ops.create_thread(cwd=str(workdir), model="mock-model", tools=[], instructions=BRIEF))["thread_id"]
    await turn(daemon, tid, "one", LONG_REPLY)
    watch = await turn(daemon, tid, "two", LONG_REPLY)
    assert compactions(watch) == []
    watch = await turn(daemon, tid, "three", {"text": "third answer"})
    [compacted] = compactions(watch)
    assert compacted["reason"] == "auto" and compacted["items_after"] < compacted["items_before"]
    assert watch.of_type("turn.completed")[-1].data["final_text"] == "third answer"
    sent = mock_upstream.requests[-1].body["input"]
    assert [item["type"] for item in sent][-2:] == ["compaction", "message"]  # the compacted head, then the kept turn
    assert "three" in json.dumps(sent[-1])
    assert json.dumps(sent).count("lorem") == 2  # only in the two kept user messages: the long replies went
    await check_thread_invariants(daemon, tid)


async def test_compaction_after_the_endpoint_refuses_a_request_as_too_long(daemon: Any, workdir: Path, mock_upstream: Any) -> None:
    tid = (await daemon.ops.create_thread(cwd=str(workdir), model="mock-model", tools=[], instructions=BRIEF))["thread_id"]
    await turn(daemon, tid, "one", LONG_REPLY)
    await turn(daemon, tid, "two", LONG_REPLY)
    watch = await turn(daemon, tid, "three", {"endpoint": {"context_window": 1500}, "steps": [{"text": "fits now"}]})
    [compacted] = compactions(watch)
    assert compacted["reason"] == "context_length_exceeded"
    assert watch.of_type("turn.completed")[-1].data["final_text"] == "fits now"
    refused = [r for r in mock_upstream.requests if r.path.endswith("/responses")][-2]
    assert len(json.dumps(refused.body)) // 4 > 1500  # the first attempt really was too long
    await check_thread_invariants(daemon, tid)


async def test_no_compaction_loop_when_nothing_can_shrink(daemon: Any, workdir: Path) -> None:
    tid = (await daemon.ops.create_thread(cwd=str(workdir), model="mock-model", tools=[], instructions=BRIEF))["thread_id"]
    filler = "x" * 4000  # user messages are kept verbatim by compaction: it cannot make room
    await turn(daemon, tid, f"one {filler}", {"text": "ok"})
    watch = await turn(daemon, tid, f"two {filler}", {"endpoint": {"context_window": 1500}, "steps": [{"text": "never"}]})
    assert len(compactions(watch)) == 1
    error = watch.of_type("turn.error")[-1].data["error"]
    assert error["code"] == "context_window_exceeded", error
    assert (await daemon.ops.get_thread(tid))["state"] == "idle"
    await check_thread_invariants(daemon, tid)


async def test_an_endpoint_without_a_compact_call_gets_a_summary(daemon: Any, workdir: Path, mock_upstream: Any) -> None:
    no_call = {"compact_call": False}
    tid = (await daemon.ops.create_thread(cwd=str(workdir), model="mock-model", tools=[], instructions=BRIEF))["thread_id"]
    await turn(daemon, tid, "one", {"endpoint": no_call, "steps": [LONG_REPLY]})
    await turn(daemon, tid, "two", {"endpoint": no_call, "steps": [LONG_REPLY]})
    script = {"endpoint": {**no_call, "context_window": 1500}, "steps": [{"text": "after the summary"}]}
    watch = await turn(daemon, tid, "three", script)
    [compacted] = compactions(watch)
    assert compacted["reason"] == "context_length_exceeded"
    assert watch.of_type("turn.completed")[-1].data["final_text"] == "after the summary"
    history = await daemon.ops.history(tid)
    assert history[0]["content"][0]["text"].startswith("Summary of the earlier conversation")
    summary_request = [r for r in mock_upstream.requests if r.path.endswith("/responses")][-2].body
    assert "Write a summary of the conversation so far" in json.dumps(summary_request["input"][-1])
