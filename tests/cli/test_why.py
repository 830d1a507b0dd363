"""``echs why ID`` and the thread object's ``waiting_on``: each way a thread can be stuck,
made for real on a real daemon (``echsd serve`` subprocess), and named by ``echs why`` and
in ``echs ls``'s column."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, AsyncIterator, Iterator

import pytest
import trio

from tests.cli.helpers import Serve, client_for, echs_async, new_thread, of_type, wait_event
from tests.helpers import mock_directive

STALL = {"text": "thinking out loud", "fault": "stall", "after_deltas": 1}


@pytest.fixture(scope="module")
def slots(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A daemon that runs one sub-agent turn at a time (the second waits for a slot)."""
    state = tmp_path_factory.mktemp("why") / "state"
    state.mkdir(mode=0o700)
    (state / "config.toml").write_text("[tuning]\nmax_running_subagents = 1\n")
    daemon = Serve(state)
    yield state
    daemon.kill()


async def why(state: Path, thread_id: str) -> tuple[dict[str, Any], str]:
    """``echs why --json`` and the human form."""
    as_json = await echs_async(state, "why", thread_id, "--json")
    assert as_json.returncode == 0, as_json.stderr
    human = await echs_async(state, "why", thread_id)
    assert human.returncode == 0, human.stderr
    return json.loads(as_json.stdout), human.stdout.decode()


async def why_until(state: Path, thread_id: str, kind: str) -> tuple[dict[str, Any], str]:
    """``echs why`` once the thread waits on ``kind`` (a wait_agents call notes its agents
    just after its tool.started: there is no event to wait on in between)."""
    with trio.fail_after(10):
        while True:
            found = await why(state, thread_id)
            if (found[0].get("waiting_on") or {}).get("kind") == kind:
                return found
            await trio.sleep(0.05)


@pytest.fixture
async def client(slots: Path) -> AsyncIterator[Any]:
    async with client_for(slots) as connected:
        yield connected


async def test_model_stream(slots: Path, client: Any, tmp_path: Path) -> None:
    tid = new_thread(slots, "--cwd", str(tmp_path))
    await client.send(tid, mock_directive(STALL))
    await wait_event(client, tid, of_type("turn.delta"))
    found, text = await why(slots, tid)
    waiting = found["waiting_on"]
    assert waiting["kind"] == "model" and waiting["model"] == found["config"]["model"]
    assert waiting["last_event_age_s"] >= 0 and waiting["turn_id"] == found["active_turn"]
    assert "waiting on: model stream" in text and "last event" in text
    assert "turn.started" in text  # the last events
    ls = await echs_async(slots, "ls")
    assert "WAITING ON" in ls.stdout.decode() and "model stream" in ls.stdout.decode()
    await client.send(tid, "and then", mode="queue")
    found, text = await why(slots, tid)
    assert found["waiting_on"]["queued"] == 1 and found["waiting_on"]["behind"] == found["active_turn"]
    assert "1 input(s) queued behind this turn" in text
    await client.interrupt(tid, clear_queue=True)


async def test_tool_with_its_process(slots: Path, client: Any, tmp_path: Path) -> None:
    tid = new_thread(slots, "--cwd", str(tmp_path))
    command = "echo started; while [ ! -e gate ]; do sleep 0.05; done"
    call = {"name": "exec_command", "arguments": {"cmd": command, "yield_time_ms": 30000}}
    await client.send(tid, mock_directive([{"calls": [call]}, {"text": "done"}]))
    await wait_event(client, tid, of_type("tool.output"))
    found, text = await why(slots, tid)
    waiting = found["waiting_on"]
    assert waiting["kind"] == "tool" and waiting["tool"] == "exec_command"
    assert waiting["command"] == command and waiting["runtime_s"] >= 0
    assert Path(f"/proc/{waiting['pid']}").exists()
    assert f"pid {waiting['pid']}" in text and "tool exec_command" in text
    assert "tool.started" in text and "streamed event" in text  # its output, counted
    (tmp_path / "gate").touch()
    await wait_event(client, tid, of_type("turn.completed"))
    found, text = await why(slots, tid)
    assert found["waiting_on"] is None and "waiting on nothing" in text


async def test_approval(slots: Path, client: Any, tmp_path: Path) -> None:
    tid = new_thread(slots, "--cwd", str(tmp_path), "--approval", "always")
    await client.send(tid, mock_directive([{"calls": [{"name": "exec_command", "arguments": {"cmd": "true"}}]}, {"text": "ok"}]))
    asked = await wait_event(client, tid, of_type("approval.requested"))
    found, text = await why(slots, tid)
    request_id = asked["data"]["request_id"]
    assert found["waiting_on"]["kind"] == "approval" and found["waiting_on"]["request_id"] == request_id
    assert found["waiting_on"]["tool"] == "exec_command"
    assert f"approval {request_id}" in text and f"echs approve {request_id}" in text
    await client.respond_approval(request_id, "deny")
    await wait_event(client, tid, of_type("turn.completed"))


async def test_retry_backoff(slots: Path, client: Any, tmp_path: Path) -> None:
    tid = new_thread(slots, "--cwd", str(tmp_path))
    await client.send(tid, mock_directive({"fault": "http", "status": 503, "retry_after": 60, "times": 1, "text": "back"}))
    await wait_event(client, tid, of_type("turn.retry"))
    found, text = await why(slots, tid)
    waiting = found["waiting_on"]
    assert waiting["kind"] == "retry" and waiting["attempt"] == 1 and 30 < waiting["in_s"] <= 60
    assert "retry 1/" in text
    await client.interrupt(tid)


async def test_sub_agents_and_a_slot_queue(slots: Path, client: Any, tmp_path: Path) -> None:
    """Two children on a daemon with one sub-agent slot: one streams, the other's turn
    queues for the slot; the parent waits for both in wait_agents."""
    parent = new_thread(slots, "--cwd", str(tmp_path))
    spawn = {"name": "spawn_agent", "arguments": {"message": mock_directive(STALL)}}
    await client.send(parent, mock_directive([{"calls": [spawn]}, {"calls": [spawn]}, {"calls": [{"name": "wait_agents", "arguments": {}}]}]))
    waited = await wait_event(client, parent, lambda e: e["event"] == "tool.started" and e["data"]["name"] == "wait_agents")
    found, text = await why_until(slots, parent, "agents")
    children = sorted(found["children"])
    assert len(children) == 2 and sorted(found["waiting_on"]["agents"]) == children
    assert found["waiting_on"]["call_id"] == waited["data"]["call_id"]
    assert "sub-agents" in text and all(child in text for child in children)
    states = {child: (await why(slots, child))[0]["waiting_on"] for child in children}
    for child in children:  # the one not streaming yet is queued behind the slot
        if states[child]["kind"] != "queue":
            await wait_event(client, child, of_type("turn.delta"))
    for child in children:
        states[child] = (await why(slots, child))[0]["waiting_on"]
    assert sorted(state["kind"] for state in states.values()) == ["model", "queue"]
    queued = next(child for child in children if states[child]["kind"] == "queue")
    assert states[queued]["behind"] == "sub-agent slots"
    assert "queued behind sub-agent slots" in (await why(slots, queued))[1]
    await client.kill(parent)


async def test_paused_and_killed(slots: Path, client: Any, tmp_path: Path) -> None:
    tid = new_thread(slots, "--cwd", str(tmp_path))
    await client.pause(tid)
    await client.send(tid, "later")
    found, text = await why(slots, tid)
    assert found["waiting_on"] == {"kind": "paused", "queued": 1}
    assert "paused, 1 input(s) queued" in text and f"echs resume {tid}" in text
    await client.kill(tid)
    found, text = await why(slots, tid)
    assert found["waiting_on"] is None and "killed" in text
