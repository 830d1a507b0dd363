"""Autonomous runs (thread.send {steps}) and attachments, through the real loop."""

from __future__ import annotations

import base64
import json
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

import trio

from echsd.codex.mock import open_mock_upstream
from echsd.daemon import Daemon
from tests.helpers import Watch, check_thread_invariants, conversation, make_settings


@asynccontextmanager
async def scripted(tmp_path: Path, nursery: trio.Nursery, replies: dict[str, Any]) -> AsyncIterator[tuple[Any, Any]]:
    """A daemon on a mock whose replies follow its rules: the continuation inputs of a run
    carry no script, so each turn of the run is scripted by a rule matching its text."""
    rules = [{"match": match, "steps": [step] if isinstance(step, dict) else step} for match, step in replies.items()]
    async with open_mock_upstream({"rules": rules}) as mock:
        daemon = Daemon(make_settings(tmp_path / "state", mock.base_url))
        await nursery.start(daemon.run)
        try:
            yield daemon, mock
        finally:
            daemon.request_stop()
            await daemon.wait_stopped()


async def run_until_finished(daemon: Any, tid: str, text: str, **send: Any) -> Watch:
    async with Watch(daemon, tid) as watch:
        ack = await daemon.ops.send(tid, text, **send)
        finished = await watch.wait_type("run.finished", input_id=ack["input_id"], timeout=30)
        assert finished.data["input_id"] == ack["input_id"]
    return watch


async def test_a_run_stops_at_the_finish_marker(tmp_path: Path, nursery: trio.Nursery, workdir: Path) -> None:
    replies = {"do it": {"text": "step one"}, "turn 2 of": {"text": "step two"}, "turn 3 of": {"text": "all finished %%DONE%%"}, "turn 4 of": {"text": "never"}}
    async with scripted(tmp_path, nursery, replies) as (daemon, mock_upstream):
        tid = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
        watch = await run_until_finished(daemon, tid, "do it", steps=10)
        await _check_done_run(daemon, tid, watch, mock_upstream)


async def _check_done_run(daemon: Any, tid: str, watch: Watch, mock_upstream: Any) -> None:
    completed = [e.data for e in watch.of_type("turn.completed")]
    assert [c["final_text"] for c in completed] == ["step one", "step two", "all finished"]
    assert completed[-1].get("done") is True and "done" not in completed[0]
    assert watch.of_type("run.finished")[0].data == {"input_id": watch.of_type("turn.started")[0].data["input_ids"][0], "turns": 3, "reason": "done"}
    assert len(watch.of_type("turn.started")) == 3  # each step is a turn of its own
    body = mock_upstream.requests[-1].body
    assert "%%DONE%%" in body["instructions"] and "turn 3 of at most 10" in body["instructions"]
    assert "Continue with the task" in json.dumps(body["input"][-1])
    await check_thread_invariants(daemon, tid)


async def test_a_run_stops_after_its_steps_and_then_the_queue_goes_on(tmp_path: Path, nursery: trio.Nursery, workdir: Path) -> None:
    replies = {"go": {"text": "a", "delay_ms": 50, "deltas": 2}, "turn 2 of": {"text": "b"}, "turn 3 of": {"text": "c"}, "queued one": {"text": "the queued one"}}
    async with scripted(tmp_path, nursery, replies) as (daemon, _mock):
        tid = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
        await daemon.ops.configure(tid, {"steps": 2})
        async with Watch(daemon, tid) as watch:
            first = await daemon.ops.send(tid, "go")
            later = await daemon.ops.send(tid, "the queued one", mode="queue", steps=1)
            finished = await watch.wait_type("run.finished", input_id=first["input_id"])
            await watch.wait_for(lambda e: e.type == "turn.completed" and e.data["final_text"] == "the queued one")
        assert finished.data["turns"] == 2 and finished.data["reason"] == "steps"
        assert [e.data["final_text"] for e in watch.of_type("turn.completed")] == ["a", "b", "the queued one"]
        assert later["disposition"] == "queued"


async def test_an_interrupt_ends_the_run(tmp_path: Path, nursery: trio.Nursery, workdir: Path) -> None:
    slow = {"text": " ".join(f"w{i}" for i in range(300)), "deltas": 300, "delay_ms": 10}
    async with scripted(tmp_path, nursery, {"go": {"text": "first"}, "turn 2 of": slow}) as (daemon, _mock):
        tid = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
        async with Watch(daemon, tid) as watch:
            ack = await daemon.ops.send(tid, "go", steps=5)
            await watch.wait_count("turn.started", 2)
            await watch.wait_type("turn.delta", after_seq=watch.of_type("turn.started")[1].seq)
            await daemon.ops.interrupt(tid)
            finished = await watch.wait_type("run.finished", input_id=ack["input_id"])
        assert finished.data == {"input_id": ack["input_id"], "turns": 2, "reason": "interrupt"}
        assert (await daemon.ops.get_thread(tid))["queued"] == 0


async def test_attachments_reach_the_model(daemon: Any, workdir: Path, mock_upstream: Any) -> None:
    pixel = "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\nfake").decode()
    attachments = [{"type": "text", "name": "notes.txt", "text": "remember the milk"}, {"type": "image", "name": "shot.png", "image_url": pixel}]
    tid = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    async with Watch(daemon, tid) as watch:
        await daemon.ops.send(tid, "look at these", attachments=attachments)
        await watch.wait_type("turn.completed")
    message = conversation(mock_upstream.requests[-1].body["input"])[0]
    assert message["content"] == [
        {"type": "input_text", "text": "look at these"},
        {"type": "input_text", "text": '<file name="notes.txt">\nremember the milk\n</file>'},
        {"type": "input_image", "image_url": pixel},
    ]
    assert conversation(await daemon.ops.history(tid))[0] == message
