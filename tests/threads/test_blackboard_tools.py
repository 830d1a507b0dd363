"""The blackboard tools through the real tool loop: writes in the thread's name, reads,
compare-and-set between threads, ``blackboard_wait`` woken by another thread's write (and
ended by its timeout or an interrupt), and ``notify_parent`` reaching the parent's next
model request, whether the parent is running, idle or paused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trio

from tests.helpers import Watch, check_thread_invariants, mock_directive
from tests.wire.helpers import start_daemon, stop_daemon

END = ("turn.completed", "turn.error", "turn.interrupted")


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def outputs(watch: Watch, name: str) -> list[Any]:
    """The outputs of the ``name`` calls among the watched events (after ``watch.since``)."""
    found = []
    for event in watch.of_type("tool.completed"):
        if event.data["name"] == name and event.seq > getattr(watch, "since", 0):
            text = event.data["output"]
            found.append(json.loads(text) if text.startswith("{") else text)
    return found


async def run_turn(daemon: Any, thread_id: str, steps: list[dict[str, Any]]) -> Watch:
    """One scripted turn; the watch's ``since`` marks where it began."""
    async with Watch(daemon, thread_id) as watch:
        watch.since = watch.last_seq  # type: ignore[attr-defined]
        await daemon.ops.send(thread_id, mock_directive(steps))
        await watch.wait_for(lambda e: e.type in END, timeout=30, after_seq=watch.since)  # type: ignore[attr-defined]
    return watch


async def new_thread(daemon: Any, workdir: Path, **params: Any) -> str:
    return str((await daemon.ops.create_thread(cwd=str(workdir), **params))["thread_id"])


async def test_write_read_and_compare_and_set_between_threads(daemon: Any, workdir: Path) -> None:
    one, two = await new_thread(daemon, workdir), await new_thread(daemon, workdir)
    watch = await run_turn(daemon, one, [{"calls": [call("blackboard_write", key="team/plan", value={"steps": ["a"]})]}, {"text": "ok"}])
    [written] = outputs(watch, "blackboard_write")
    assert written["version"] == 1 and written["writer"] == one and written["value"] == {"steps": ["a"]}

    # Both threads update from version 1: exactly one of them wins, the other is told.
    racing = [call("blackboard_write", key="team/plan", value={"by": "x"}, if_version=1)]
    async with trio.open_nursery() as nursery:
        results: dict[str, Watch] = {}

        async def turn(thread_id: str) -> None:
            results[thread_id] = await run_turn(daemon, thread_id, [{"calls": racing}, {"text": "ok"}])

        nursery.start_soon(turn, one)
        nursery.start_soon(turn, two)
    answers = [outputs(results[tid], "blackboard_write")[0] for tid in (one, two)]
    wins = [a for a in answers if isinstance(a, dict)]
    losses = [a for a in answers if isinstance(a, str)]
    assert len(wins) == 1 and len(losses) == 1
    assert losses[0].startswith("error: conflict:") and "at version 2, not at version 1" in losses[0]
    entry = daemon.blackboard.get("team/plan")
    assert entry.version == 2 and entry.writer == wins[0]["writer"]

    reads = [call("blackboard_read", key="team/plan"), call("blackboard_read", prefix="team/"), call("blackboard_read", key="nope")]
    watch = await run_turn(daemon, two, [{"calls": reads}, {"text": "ok"}])
    answers = outputs(watch, "blackboard_read")  # the calls ran in parallel: any order
    [by_prefix] = [a for a in answers if "entries" in a]
    assert [e["key"] for e in by_prefix["entries"]] == ["team/plan"]
    assert sorted((a["entry"] or {}).get("version", 0) for a in answers if "entry" in a) == [0, 2]
    for tid in (one, two):
        await check_thread_invariants(daemon, tid)


async def test_bad_tool_input_is_the_calls_output(tmp_path: Path, mock_upstream: Any, nursery: trio.Nursery, workdir: Path) -> None:
    daemon = await start_daemon(nursery, tmp_path / "state", mock_upstream.base_url, tcp=False, tuning={"blackboard_max_value_bytes": 1024})
    tid = await new_thread(daemon, workdir)
    bad = [
        call("blackboard_write", key="", value=1),
        call("blackboard_write", key="k", value="x" * 2000),
        call("blackboard_write", key="k"),
        call("blackboard_read", key="a", prefix="b"),
        call("blackboard_wait", key="k", timeout_ms=-1),
    ]
    watch = await run_turn(daemon, tid, [{"calls": bad}, {"text": "ok"}])
    texts = sorted(e.data["output"] for e in watch.of_type("tool.completed"))  # parallel calls: any order
    assert texts == [
        "error: bad_request: blackboard key is empty",
        "error: bad_request: value is 2,002 bytes as JSON; the limit is 1,024 bytes ([tuning] blackboard_max_value_bytes)",
        "error: give key or prefix, not both",
        "error: invalid arguments: missing required field(s): value",
        "error: timeout_ms must be between 0 and 3600000",
    ]
    assert daemon.blackboard.find("k") is None
    await stop_daemon(daemon)


async def test_wait_is_woken_by_another_threads_write(daemon: Any, workdir: Path) -> None:
    waiter, writer = await new_thread(daemon, workdir), await new_thread(daemon, workdir)
    async with Watch(daemon, waiter) as watch:
        await daemon.ops.send(waiter, mock_directive([{"calls": [call("blackboard_wait", key="shared/x", timeout_ms=60_000)]}, {"text": "ok"}]))
        await watch.wait_for(lambda e: e.type == "tool.started" and e.data["name"] == "blackboard_wait")
        assert not watch.of_type("tool.completed")
        await run_turn(daemon, writer, [{"calls": [call("blackboard_write", key="shared/x", value="hello")]}, {"text": "ok"}])
        await watch.wait_for(lambda e: e.type in END, timeout=30)
    [waited] = outputs(watch, "blackboard_wait")
    assert waited["timed_out"] is False
    [entry] = waited["changed"]
    assert (entry["key"], entry["value"], entry["writer"], entry["version"]) == ("shared/x", "hello", writer, 1)

    # after_version: an entry already above it is returned at once; a prefix wait too.
    steps = [{"calls": [call("blackboard_wait", key="shared/x", after_version=0), call("blackboard_wait", prefix="shared/", after_version=0)]}, {"text": "ok"}]
    watch = await run_turn(daemon, waiter, steps)
    assert [w["changed"][0]["value"] for w in outputs(watch, "blackboard_wait")] == ["hello", "hello"]


async def test_wait_honours_its_timeout_and_an_interrupt(daemon: Any, workdir: Path) -> None:
    tid = await new_thread(daemon, workdir)
    watch = await run_turn(daemon, tid, [{"calls": [call("blackboard_wait", prefix="never/", timeout_ms=300)]}, {"text": "ok"}])
    [waited] = outputs(watch, "blackboard_wait")
    assert waited == {"changed": [], "timed_out": True}
    completed = [e for e in watch.of_type("tool.completed") if e.data["name"] == "blackboard_wait"][0]
    assert 250 <= completed.data["duration_ms"] < 2000

    async with Watch(daemon, tid) as watch:
        await daemon.ops.send(tid, mock_directive([{"calls": [call("blackboard_wait", prefix="never/", timeout_ms=600_000)]}, {"text": "x"}]))
        await watch.wait_for(lambda e: e.type == "tool.started" and e.data["name"] == "blackboard_wait")
        started = trio.current_time()
        assert (await daemon.ops.interrupt(tid))["interrupted"] is True
        assert trio.current_time() - started < 1.0
        await watch.wait_type("turn.interrupted")
    await check_thread_invariants(daemon, tid)


def note_requests(mock_upstream: Any, key: str) -> list[dict[str, Any]]:
    """Model requests whose input holds the blackboard note about ``key``."""
    return [r.body for r in mock_upstream.requests if "[blackboard]" in json.dumps(r.body.get("input")) and key in json.dumps(r.body.get("input"))]


def writing_child(key: str) -> str:
    steps = [{"calls": [call("blackboard_write", key=key, value={"found": 42}, notify_parent=True)]}, {"text": "written"}]
    return "write it\n" + mock_directive(steps)


async def test_notify_parent_reaches_a_waiting_parents_next_request(daemon: Any, workdir: Path, mock_upstream: Any) -> None:
    parent = await new_thread(daemon, workdir)
    steps = [{"calls": [call("spawn_agent", message=writing_child("team/answer"))]}, {"calls": [call("wait_agents")]}, {"text": "x"}]
    async with Watch(daemon, parent) as watch:
        await daemon.ops.send(parent, mock_directive(steps))
        await watch.wait_type("input.delivered", mode="steer", timeout=30)
        await watch.wait_for(lambda e: e.type in END, timeout=30)
    child = (await daemon.ops.get_thread(parent))["children"][0]
    # The parent's last request (the child's own may come later; under load the note may
    # land before the wait, so the wait is not what tells them apart): its input holds the
    # parent's script, which names spawn_agent.
    last = [text for text in (json.dumps(r.body["input"]) for r in mock_upstream.requests) if "spawn_agent" in text][-1]
    assert "[blackboard]" in last and "team/answer" in last and child in last
    assert daemon.blackboard.get("team/answer").writer == child
    async with Watch(daemon, child) as child_watch:
        [written] = outputs(child_watch, "blackboard_write")
    assert written["parent_notified"] is True
    await check_thread_invariants(daemon, parent)


async def test_notify_parent_starts_an_idle_parent_and_queues_for_a_paused_one(daemon: Any, workdir: Path, mock_upstream: Any) -> None:
    parent = await new_thread(daemon, workdir)
    child = await new_thread(daemon, workdir, parent=parent)
    async with Watch(daemon, parent) as watch:
        await run_turn(daemon, child, [{"calls": [call("blackboard_write", key="idle/k", value=1, notify_parent=True)]}, {"text": "ok"}])
        await watch.wait_type("turn.completed", timeout=30)  # the note started a turn of the idle parent
    assert note_requests(mock_upstream, "idle/k")

    await daemon.ops.pause(parent)
    async with Watch(daemon, parent) as watch:
        after = watch.last_seq
        await run_turn(daemon, child, [{"calls": [call("blackboard_write", key="paused/k", value=2, notify_parent=True)]}, {"text": "ok"}])
        await watch.wait_type("input.queued", after_seq=after)
        assert (await daemon.ops.get_thread(parent))["queued"] == 1 and (await daemon.ops.get_thread(parent))["state"] == "paused"
        assert not note_requests(mock_upstream, "paused/k")
        await daemon.ops.resume(parent)
        await watch.wait_type("turn.completed", after_seq=after, timeout=30)
    assert note_requests(mock_upstream, "paused/k")

    orphan = await new_thread(daemon, workdir)  # no parent: the write stands, the answer says why
    watch = await run_turn(daemon, orphan, [{"calls": [call("blackboard_write", key="o/k", value=3, notify_parent=True)]}, {"text": "ok"}])
    [written] = outputs(watch, "blackboard_write")
    assert written["version"] == 1 and "no parent" in written["parent_notified"]
