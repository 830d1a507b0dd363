"""Tool output is bounded in bytes: streamed per turn (`turn_output_bytes`), stored per
thread (`retained_delta_bytes`), and binary control characters do not blow up the log."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from echsd.wire.client import connect
from tests.helpers import mock_directive, store_url_for
from tests.wire.helpers import start_daemon, stop_daemon

DELTAS = ("turn.delta", "turn.reasoning_delta", "tool.output")


def exec_call(cmd: str) -> dict[str, Any]:
    return {"name": "exec_command", "arguments": {"cmd": cmd, "yield_time_ms": 10_000}}


def bulk(nbytes: int) -> str:
    """A command printing ``nbytes`` of text in lines."""
    return f"head -c {nbytes} /dev/zero | tr '\\0' 'x' | fold -w 100"


async def run_turn(client: Any, tid: str, steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Send a scripted turn and return the thread's events from its start to its end."""
    since = (await client.get_thread(tid))["last_seq"]
    async with client.events(tid, since=since) as stream:
        await client.send(tid, mock_directive(steps))
        events = []
        async for event in stream:
            events.append(event)
            if event["event"] in ("turn.completed", "turn.error", "turn.interrupted"):
                return events
    raise AssertionError("the event stream ended early")


def stored_delta_bytes(state_dir: Path, tid: str) -> int:
    if store_url_for(state_dir) is not None:
        return -1
    with sqlite3.connect(f"file:{state_dir / 'echsd.db'}?mode=ro", uri=True) as db:
        marks = ",".join("?" * len(DELTAS))
        (total,) = db.execute(f"SELECT coalesce(sum(length(data)), 0) FROM events WHERE thread_id = ? AND type IN ({marks})", (tid, *DELTAS)).fetchone()
    return int(total)


async def test_streamed_tool_output_has_a_budget_per_turn(tmp_path: Path, mock_upstream: Any, nursery: Any) -> None:
    daemon = await start_daemon(nursery, tmp_path / "state", mock_upstream.base_url, tuning={"turn_output_bytes": 65536})
    async with connect(state_dir=daemon.settings.state_dir) as client:
        tid = (await client.create_thread(cwd=str(tmp_path)))["thread_id"]
        calls = [{"calls": [exec_call(bulk(100_000))]} for _ in range(4)]
        events = await run_turn(client, tid, [*calls, {"text": "done"}])
        assert events[-1]["event"] == "turn.completed", events[-1]
        chunks = [e["data"]["chunk"] for e in events if e["event"] == "tool.output"]
        notices = [c for c in chunks if "turn_output_bytes" in c]
        assert len(notices) == 1, [len(c) for c in chunks]
        assert sum(len(c.encode()) for c in chunks) <= 65536 + len(notices[0].encode())
        completed = [e["data"] for e in events if e["event"] == "tool.completed"]
        assert len(completed) == 4 and all("xxxx" in c["output"] for c in completed)  # the model still sees each one
        again = await run_turn(client, tid, [{"calls": [exec_call("echo next turn")]}, {"text": "ok"}])
        assert any("next turn" in e["data"]["chunk"] for e in again if e["event"] == "tool.output")  # a fresh budget
    await stop_daemon(daemon)


async def test_nul_bytes_become_replacement_characters(tmp_path: Path, mock_upstream: Any, nursery: Any) -> None:
    daemon = await start_daemon(nursery, tmp_path / "state", mock_upstream.base_url)
    async with connect(state_dir=daemon.settings.state_dir) as client:
        tid = (await client.create_thread(cwd=str(tmp_path)))["thread_id"]
        nuls = "head -c 20000 /dev/zero; printf 'end\\n'"
        events = await run_turn(client, tid, [{"calls": [exec_call(nuls)]}, {"text": "done"}])
        streamed = "".join(e["data"]["chunk"] for e in events if e["event"] == "tool.output")
        assert "\x00" not in streamed and streamed.startswith("\ufffd" * 100) and streamed.endswith("end\n")
        output = next(e["data"]["output"] for e in events if e["event"] == "tool.completed")
        assert "\x00" not in output and "\ufffd" in output
        sent_back = mock_upstream.requests[-1].body["input"][-1]["output"]
        assert "\x00" not in sent_back
    stored = stored_delta_bytes(daemon.settings.state_dir, tid)
    assert stored == -1 or stored < 3 * 20_000 + 4096  # 3 bytes a character, not 6
    await stop_daemon(daemon)


async def test_stored_deltas_are_kept_within_a_byte_budget(tmp_path: Path, mock_upstream: Any, nursery: Any) -> None:
    budget = 1024 * 1024
    daemon = await start_daemon(nursery, tmp_path / "state", mock_upstream.base_url, tuning={"retained_delta_bytes": budget})
    async with connect(state_dir=daemon.settings.state_dir) as client:
        tid = (await client.create_thread(cwd=str(tmp_path)))["thread_id"]
        for _ in range(4):
            events = await run_turn(client, tid, [{"calls": [exec_call(bulk(600_000))]}, {"text": "done"}])
            assert events[-1]["event"] == "turn.completed"
        stored = stored_delta_bytes(daemon.settings.state_dir, tid)
        assert stored <= budget, stored
        page = await client.thread_events(tid, since=0)
        assert any(e["event"] == "events.gap" and e["data"]["reason"] == "retention" for e in page)
        history = await client.history(tid)
        outputs = [i for i in history if i.get("type") == "function_call_output"]
        assert len(outputs) == 4  # what the model saw is all there
    await stop_daemon(daemon)
