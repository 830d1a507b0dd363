"""Turn control under real conditions: steer, queue, interrupt, pause, kill, idempotency."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import pytest
import trio

from echsd.errors import InvalidState
from tests.helpers import Watch, check_thread_invariants, conversation, mock_directive

SLOW_TEXT = {"text": " ".join(f"w{i}" for i in range(400)), "deltas": 400, "delay_ms": 10}


def gate_call(gate: Path, echo: str = "released") -> dict[str, Any]:
    """An exec_command call that blocks until the test writes a line into ``gate`` (a FIFO)."""
    return {"name": "exec_command", "arguments": {"cmd": f"read line < {gate}; echo {echo} $line"}}


def make_gate(directory: Path, name: str = "gate") -> Path:
    gate = directory / name
    os.mkfifo(gate)
    return gate


async def open_gate(gate: Path, text: str = "go") -> None:
    def write() -> None:
        with open(gate, "w") as fifo:  # blocks until the command has the FIFO open
            fifo.write(text + "\n")

    await trio.to_thread.run_sync(write)


def unique_sleep() -> str:
    """A ``sleep`` whose argument is unique, so the shell and the sleep itself can be found."""
    return f"sleep 60.{uuid.uuid4().int % 10**9:09d}"


def processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if marker.encode() in cmdline:
            found.append(int(entry.name))
    return found


def user_texts(body: dict[str, Any]) -> list[str]:
    return [
        "".join(part.get("text", "") for part in item["content"])
        for item in body["input"]
        if item.get("type") == "message" and item.get("role") == "user"
    ]


async def test_steer_during_streaming_joins_the_turn(daemon: Any, workdir: Any, mock_upstream: Any) -> None:
    tid = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    async with Watch(daemon, tid) as watch:
        await daemon.ops.send(tid, mock_directive(SLOW_TEXT))
        await watch.wait_type("turn.delta")
        ack = await daemon.ops.send(tid, "STEER-NOW", mode="steer")
        assert ack["disposition"] == "steered"
        await watch.wait_type("turn.completed")
    assert len(watch.of_type("turn.started")) == 1
    last = mock_upstream.requests[-1].body
    assert user_texts(last)[-1] == "STEER-NOW"
    kinds = [(item["type"], item.get("role")) for item in last["input"]]
    # The first response (completed before the steer landed) is kept ahead of the steer.
    assert kinds[-2:] == [("message", "assistant"), ("message", "user")]
    delivered = watch.of_type("input.delivered")
    assert [e.data["mode"] for e in delivered] == ["send", "steer"]
    await check_thread_invariants(daemon, tid)


async def test_steer_during_running_tool(daemon: Any, workdir: Any, mock_upstream: Any) -> None:
    gate = make_gate(workdir)
    tid = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    async with Watch(daemon, tid) as watch:
        await daemon.ops.send(tid, mock_directive([{"calls": [gate_call(gate)]}, {"text": "after tool"}]))
        await watch.wait_type("tool.started")
        ack = await daemon.ops.send(tid, "STEER-WHILE-TOOL", mode="steer")
        assert ack["disposition"] == "steered"
        await open_gate(gate)
        await watch.wait_type("turn.completed")
    body = mock_upstream.requests[-1].body
    kinds = [item["type"] for item in body["input"]]
    assert kinds[-3:] == ["function_call", "function_call_output", "message"]
    assert user_texts(body)[-1] == "STEER-WHILE-TOOL"
    assert "released go" in body["input"][-2]["output"]
    assert len(watch.of_type("turn.started")) == 1
    await check_thread_invariants(daemon, tid)


async def test_queue_runs_in_order_each_as_its_own_turn(daemon: Any, workdir: Any, mock_upstream: Any) -> None:
    gate = make_gate(workdir)
    tid = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    async with Watch(daemon, tid) as watch:
        await daemon.ops.send(tid, mock_directive([{"calls": [gate_call(gate)]}, {"text": "first done"}]))
        await watch.wait_type("tool.started")
        acks = [await daemon.ops.send(tid, mock_directive({"text": f"reply-{i}"}), mode="queue") for i in range(3)]
        assert [a["disposition"] for a in acks] == ["queued"] * 3
        plain = await daemon.ops.send(tid, mock_directive({"text": "reply-plain"}))
        assert plain["disposition"] == "queued"
        assert (await daemon.ops.get_thread(tid))["queued"] == 4
        await open_gate(gate)
        await watch.wait_count("turn.completed", 5)
    finals = [e.data["final_text"] for e in watch.of_type("turn.completed")]
    assert finals == ["first done", "reply-0", "reply-1", "reply-2", "reply-plain"]
    queued_events = [e.data["input_id"] for e in watch.of_type("input.queued")]
    assert queued_events == [a["input_id"] for a in acks] + [plain["input_id"]]
    await check_thread_invariants(daemon, tid)


async def test_interrupt_while_streaming(daemon: Any, workdir: Any) -> None:
    tid = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    async with Watch(daemon, tid) as watch:
        await daemon.ops.send(tid, mock_directive(SLOW_TEXT))
        await watch.wait_type("turn.delta")
        started = trio.current_time()
        result = await daemon.ops.interrupt(tid)
        elapsed = trio.current_time() - started
        assert result["interrupted"] is True
        # The terminal event is committed before interrupt answers.
        event = await watch.wait_type("turn.interrupted", timeout=1)
    assert elapsed < 1.0
    assert event.data["reason"] == "interrupt"
    assert (await daemon.ops.get_thread(tid))["state"] == "idle"
    history = conversation(await daemon.ops.history(tid))
    assert [item.get("role") for item in history] == ["user", "assistant"]  # the partial reply is kept, marked
    shown = "".join(e.data["delta"] for e in watch.of_type("turn.delta"))
    kept = history[1]["content"][0]["text"]
    assert kept.endswith(" [interrupted]") and kept.removesuffix(" [interrupted]") == shown
    again = await daemon.ops.interrupt(tid)
    assert again["interrupted"] is False
    await check_thread_invariants(daemon, tid)


async def test_interrupt_kills_running_command_and_repairs_history(daemon: Any, workdir: Any) -> None:
    marker = unique_sleep()
    call = {"name": "exec_command", "arguments": {"cmd": f"echo ready; {marker} && echo never; {marker}"}}
    tid = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    async with Watch(daemon, tid) as watch:
        await daemon.ops.send(tid, mock_directive([{"calls": [call]}, {"text": "never"}]))
        await watch.wait_type("tool.output")
        assert len(processes_with(marker)) >= 1
        started = trio.current_time()
        result = await daemon.ops.interrupt(tid)
        elapsed = trio.current_time() - started
    assert result["interrupted"] is True
    assert elapsed < 1.0
    assert processes_with(marker) == []
    history = await daemon.ops.history(tid)
    assert history[-1]["type"] == "function_call_output"
    assert "interrupted" in history[-1]["output"]
    await check_thread_invariants(daemon, tid)


async def test_queue_continues_after_interrupt_unless_cleared(daemon: Any, workdir: Any) -> None:
    tid = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    async with Watch(daemon, tid) as watch:
        await daemon.ops.send(tid, mock_directive(SLOW_TEXT))
        await watch.wait_type("turn.delta")
        await daemon.ops.send(tid, mock_directive({"text": "next one ran"}), mode="queue")
        await daemon.ops.interrupt(tid)
        done = await watch.wait_type("turn.completed")
        assert done.data["final_text"] == "next one ran"
        await daemon.ops.send(tid, mock_directive(SLOW_TEXT))
        seq = watch.last_seq
        await watch.wait_type("turn.delta", after_seq=seq)
        dropped_ack = await daemon.ops.send(tid, "to be dropped", mode="queue")
        result = await daemon.ops.interrupt(tid, clear_queue=True)
        assert result["interrupted"] is True and result["cleared"] == 1
        dropped = await watch.wait_type("input.dropped")
    assert dropped.data["input_id"] == dropped_ack["input_id"]
    assert (await daemon.ops.get_thread(tid))["queued"] == 0
    await check_thread_invariants(daemon, tid)


async def test_pause_and_resume(daemon: Any, workdir: Any) -> None:
    tid = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    async with Watch(daemon, tid) as watch:
        await daemon.ops.send(tid, mock_directive(SLOW_TEXT))
        await watch.wait_type("turn.delta")
        await daemon.ops.send(tid, mock_directive({"text": "resumed 1"}), mode="queue")
        paused = await daemon.ops.pause(tid)
        assert paused["paused"] is True and paused["state"] == "paused"
        assert (await watch.wait_type("turn.interrupted")).data["reason"] == "pause"
        ack = await daemon.ops.send(tid, mock_directive({"text": "resumed 2"}))
        assert ack["disposition"] == "queued"
        assert (await daemon.ops.get_thread(tid))["state"] == "paused"
        assert (await daemon.ops.get_thread(tid))["queued"] == 2
        assert (await daemon.ops.pause(tid))["state"] == "paused"
        resumed = await daemon.ops.resume(tid)
        assert resumed["resumed"] is True
        await watch.wait_count("turn.completed", 2)
        assert (await daemon.ops.resume(tid))["resumed"] is False
    finals = [e.data["final_text"] for e in watch.of_type("turn.completed")]
    assert finals == ["resumed 1", "resumed 2"]
    states = [e.data["state"] for e in watch.of_type("thread.state")]
    assert "paused" in states
    await check_thread_invariants(daemon, tid)


async def test_pause_idle_thread(daemon: Any, workdir: Any) -> None:
    tid = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    result = await daemon.ops.pause(tid)
    assert result == {"thread_id": tid, "interrupted": False, "paused": True, "state": "paused"}
    ack = await daemon.ops.send(tid, "held")
    assert ack["disposition"] == "queued"


async def test_kill_parent_kills_descendants_and_their_processes(daemon: Any, workdir: Any) -> None:
    marker = unique_sleep()
    parent = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    child = (await daemon.ops.create_thread(cwd=str(workdir), parent=parent))["thread_id"]
    grandchild = (await daemon.ops.create_thread(cwd=str(workdir), parent=child))["thread_id"]
    assert (await daemon.ops.get_thread(parent))["children"] == [child]
    assert (await daemon.ops.get_thread(grandchild))["parent"] == child
    call = {"name": "exec_command", "arguments": {"cmd": f"echo ready; {marker}"}}
    async with Watch(daemon, grandchild) as watch:
        await daemon.ops.send(grandchild, mock_directive([{"calls": [call]}]))
        await daemon.ops.send(grandchild, "queued behind", mode="queue")
        await watch.wait_type("tool.output")
        assert processes_with(marker)
        result = await daemon.ops.kill(parent)
        assert set(result["killed"]) == {parent, child, grandchild}
        assert (await watch.wait_type("turn.interrupted")).data["reason"] == "kill"
        assert watch.of_type("input.dropped")
        assert watch.of_type("thread.killed")
    assert processes_with(marker) == []
    for tid in (parent, child, grandchild):
        assert (await daemon.ops.get_thread(tid))["state"] == "killed"
        with pytest.raises(InvalidState):
            await daemon.ops.send(tid, "hello?")
        with pytest.raises(InvalidState):
            await daemon.ops.interrupt(tid)
    with pytest.raises(InvalidState):
        await daemon.ops.kill(parent)
    with pytest.raises(InvalidState):
        await daemon.ops.create_thread(cwd=str(workdir), parent=parent)
    assert (await daemon.ops.history(grandchild))[-1]["type"] == "function_call_output"
    await check_thread_invariants(daemon, grandchild)


async def test_duplicate_client_msg_id_is_delivered_once(daemon: Any, workdir: Any, mock_upstream: Any) -> None:
    tid = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    async with Watch(daemon, tid) as watch:
        first = await daemon.ops.send(tid, "only once", client_msg_id="msg-1")
        second = await daemon.ops.send(tid, "only once", client_msg_id="msg-1")
        await watch.wait_type("turn.completed")
        third = await daemon.ops.send(tid, "only once", client_msg_id="msg-1")
    assert first == second == third
    changed = await daemon.ops.send(tid, "something else", client_msg_id="msg-1")
    assert changed["input_id"] == first["input_id"] and "different text" in changed["note"]
    assert len(watch.of_type("input.delivered")) == 1
    assert len(watch.of_type("turn.started")) == 1
    await check_thread_invariants(daemon, tid)
