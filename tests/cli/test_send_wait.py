"""``echs send --wait`` follows the right turn and maps how it ends onto exit codes:
a queued input waits for the turns before it, a steered one ends with the turn it
joined, an interrupt from another client is 3, Ctrl-C interrupts (3), a daemon that dies
is 1. Turns are held open by a gated tool command, so no test depends on timing."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import trio

from tests.cli.helpers import Serve, client_for, echs_async, gate_command, json_lines, new_thread, of_type, wait_event
from tests.helpers import mock_directive


def gated_turn(gate: Path, text: str = "after the gate") -> str:
    """A message whose turn runs a tool until ``gate`` exists, then says ``text``."""
    return mock_directive(
        [{"calls": [{"name": "exec_command", "arguments": {"cmd": gate_command(gate)}}]}, {"text": text}]
    )


class Background:
    """An ``echs`` run in the background of a trio test."""

    def __init__(self, nursery: trio.Nursery, state: Path, *args: str) -> None:
        self.finished = trio.Event()
        self.result: subprocess.CompletedProcess[bytes] | None = None
        nursery.start_soon(self._run, state, args)

    async def _run(self, state: Path, args: tuple[str, ...]) -> None:
        self.result = await echs_async(state, *args)
        self.finished.set()

    async def wait(self) -> subprocess.CompletedProcess[bytes]:
        with trio.fail_after(15):
            await self.finished.wait()
        assert self.result is not None
        return self.result


async def test_queued_input_waits_for_the_turns_before_it(state: Path, gate: Path) -> None:
    tid = new_thread(state)
    async with client_for(state) as client, trio.open_nursery() as nursery:
        await client.send(tid, gated_turn(gate, "first turn"))
        await wait_event(client, tid, of_type("tool.started"))
        done = Background(nursery, state, "send", tid, mock_directive({"text": "the queued reply"}), "--queue", "--wait", "--json")
        await wait_event(client, tid, of_type("input.queued"))
        gate.touch()
        result = await done.wait()
    assert result.returncode == 0, result.stderr
    events = json_lines(result.stdout)
    assert events[0]["event"] == "input.queued" and events[-1]["event"] == "turn.completed"
    text = "".join(e["data"]["delta"] for e in events if e["event"] == "turn.delta")
    assert text == "the queued reply"  # not the first turn's text


async def test_steered_input_ends_with_the_turn_it_joined(state: Path, gate: Path) -> None:
    """The steer is acknowledged (by a first send with the same --id) before the gate
    opens, so it surely joins the running turn; the repeat from echs is acknowledged with
    the same input and ``--wait`` follows it (from seq 0, as it may be an old input)."""
    tid = new_thread(state)
    async with client_for(state) as client, trio.open_nursery() as nursery:
        await client.send(tid, gated_turn(gate))
        started = await wait_event(client, tid, of_type("tool.started"))
        ack = await client.send(tid, "steer this way", mode="steer", client_msg_id="steer-1")
        assert ack["disposition"] == "steered"
        done = Background(nursery, state, "send", tid, "steer this way", "--steer", "--id", "steer-1", "--wait", "--json")
        gate.touch()
        result = await done.wait()
    assert result.returncode == 0, result.stderr
    events = json_lines(result.stdout)
    delivered = events[0]
    assert delivered["event"] == "input.delivered" and delivered["data"] == {
        **delivered["data"],
        "input_id": ack["input_id"],
        "mode": "steer",
    }
    turn_id = started["data"]["turn_id"]
    assert delivered["data"]["turn_id"] == turn_id  # joined the running turn
    assert events[-1]["event"] == "turn.completed" and events[-1]["data"]["turn_id"] == turn_id
    assert all(e["data"].get("turn_id") == turn_id for e in events)


async def test_interrupt_from_another_client_exits_3(state: Path, gate: Path) -> None:
    tid = new_thread(state)
    async with client_for(state) as client, trio.open_nursery() as nursery:
        done = Background(nursery, state, "send", tid, gated_turn(gate), "--wait")
        await wait_event(client, tid, of_type("tool.started"))
        interrupted = await echs_async(state, "interrupt", tid, "--json")
        assert interrupted.returncode == 0
        result = await done.wait()
    assert result.returncode == 3, result.stderr
    assert b"interrupted" in result.stderr


async def test_ctrl_c_interrupts_the_turn_and_exits_3(state: Path, gate: Path) -> None:
    from tests.cli.helpers import ECHS, WAIT_S, clean_env

    tid = new_thread(state)
    async with client_for(state) as client:
        command = [ECHS, "--state-dir", str(state), "send", tid, gated_turn(gate), "--wait", "--json"]
        process = await trio.lowlevel.open_process(command, env=clean_env(state.parent), stderr=subprocess.PIPE, stdout=subprocess.PIPE)
        try:
            assert process.stdout is not None and process.stderr is not None
            with trio.fail_after(WAIT_S):
                first = await process.stdout.receive_some(65536)  # it is following the turn now
            assert b"input.delivered" in first
            await wait_event(client, tid, of_type("tool.started"))
            process.send_signal(signal.SIGINT)
            interrupted = await wait_event(client, tid, of_type("turn.interrupted"))
            assert interrupted["data"]["reason"] == "interrupt"
            with trio.fail_after(WAIT_S):
                assert await process.wait() == 3
            rest = b""
            while chunk := await process.stdout.receive_some(65536):
                rest += chunk
            assert json_lines(first + rest)[-1]["event"] == "turn.interrupted"
            assert b"interrupting turn" in await process.stderr.receive_some(65536)
        finally:
            process.kill()


async def test_daemon_that_dies_during_wait_exits_1(tmp_path: Path, gate: Path) -> None:
    own = Serve(tmp_path / "state")
    try:
        tid = new_thread(own.state_dir)
        async with client_for(own.state_dir) as client, trio.open_nursery() as nursery:
            done = Background(nursery, own.state_dir, "send", tid, gated_turn(gate), "--wait")
            await wait_event(client, tid, of_type("tool.started"))
            own.kill()  # SIGKILL: no goodbye
            result = await done.wait()
        assert result.returncode == 1
        assert result.stderr.startswith(b"echs: ")
    finally:
        own.kill()
        gate.touch()  # the tool command the killed daemon left behind ends too


def unique(text: str) -> str:
    """The mock counts a fault's ``times`` per script: each test's script must be its own."""
    import uuid

    return f"{text} {uuid.uuid4().hex[:8]}"


async def test_wait_shows_retries_on_stderr(state: Path) -> None:
    tid = new_thread(state)
    script = mock_directive({"text": unique("recovered"), "fault": "http", "status": 503, "retry_after": 0.05, "times": 2})
    result = await echs_async(state, "send", tid, script, "--wait")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(b"recovered ")
    notes = [line for line in result.stderr.decode().splitlines() if "retry" in line]
    assert len(notes) == 2, result.stderr
    assert notes[0].startswith("echs: model request failed, retry 1/5 in 0.05s: ") and "HTTP 503" in notes[0]
    assert notes[1].startswith("echs: model request failed, retry 2/5 in 0.05s: ")
    as_json = await echs_async(state, "send", tid, script.replace("recovered", "again"), "--wait", "--json")
    retries = [e["data"] for e in json_lines(as_json.stdout) if e["event"] == "turn.retry"]
    assert [r["attempt"] for r in retries] == [1, 2] and all({"max_retries", "delay_s", "reason"} <= set(r) for r in retries)


async def test_wait_says_why_it_waits_paused_or_queued(state: Path, gate: Path) -> None:
    tid = new_thread(state)
    async with client_for(state) as client, trio.open_nursery() as nursery:
        await client.pause(tid)
        paused = Background(nursery, state, "send", tid, "after the pause", "--wait")
        await wait_event(client, tid, of_type("input.queued"))
        await client.resume(tid)
        result = await paused.wait()
        assert result.returncode == 0, result.stderr
        notes = result.stderr.decode()
        assert f"{tid} is paused: the input waits in its queue until `echs resume {tid}`" in notes
        assert "the thread was resumed" in notes and result.stdout == b"mock reply to: after the pause\n"

        last = (await client.get_thread(tid))["last_seq"]
        await client.send(tid, gated_turn(gate, "first"))
        await wait_event(client, tid, of_type("tool.started"), since=last)
        behind = Background(nursery, state, "send", tid, "behind it", "--wait")
        await wait_event(client, tid, of_type("input.queued"), since=last)
        gate.touch()
        result = await behind.wait()
    assert result.returncode == 0, result.stderr
    assert f"a turn is running on {tid}: the input is queued and runs after it" in result.stderr.decode()
    assert result.stdout == b"mock reply to: behind it\n"


async def test_reused_id_gets_a_notice(state: Path) -> None:
    tid = new_thread(state)
    first = await echs_async(state, "send", tid, "one", "--id", "key-1", "--json")
    assert first.returncode == 0 and first.stderr == b""
    again = await echs_async(state, "send", tid, "two", "--id", "key-1", "--json")
    assert again.returncode == 0
    assert json.loads(again.stdout)["input_id"] == json.loads(first.stdout)["input_id"]
    assert b"key-1" in again.stderr and b"was used before" in again.stderr  # (worded by echs, or by a daemon that compares texts)
    fresh = await echs_async(state, "send", tid, "three", "--id", "key-2")
    assert fresh.returncode == 0 and fresh.stderr == b""


async def test_follow_ends_with_the_kill(state: Path) -> None:
    tid = new_thread(state)
    async with client_for(state) as client, trio.open_nursery() as nursery:
        following = Background(nursery, state, "events", tid, "--follow", "--json")
        await wait_event(client, tid, of_type("thread.created"))
        await client.send(tid, "hello")
        await wait_event(client, tid, of_type("turn.completed"))
        await client.kill(tid)
        live = await following.wait()
    assert live.returncode == 0, live.stderr
    events = json_lines(live.stdout)
    assert events[-1]["event"] == "thread.state" and events[-1]["data"]["state"] == "killed"
    replay = await echs_async(state, "events", tid, "--follow", "--json")  # killed already: replay, then exit
    assert replay.returncode == 0 and json_lines(replay.stdout) == events


def test_wait_says_when_the_log_folded_part_of_the_reply_away(tmp_path: Path) -> None:
    """A client that falls far behind (its stdout is not read until the turn is over) has
    its backlog dropped by the daemon and re-reads it from the log, where retention has
    folded most deltas away by then: --json shows that gap, text mode the whole reply."""
    from tests.cli.helpers import ECHS, clean_env, new_thread as make_thread

    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "config.toml").write_text("[tuning]\nretained_deltas = 10\nclient_queue_events = 100\njoin_deltas = false\n")
    daemon = Serve(state)
    try:
        for mode in ("--json", None):
            tid = make_thread(state)
            reply = mock_directive({"repeat": {"chunk": "x", "count": 20000}})
            command = [ECHS, "--state-dir", str(state), "send", tid, reply, "--wait", *([mode] if mode else [])]
            process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(state.parent))
            trio.run(_wait_turn_end, state, tid)  # echs is stuck writing to the full pipe meanwhile
            out, err = process.communicate(timeout=30)
            assert process.returncode == 0, err
            if mode == "--json":
                events = json_lines(out)
                gaps = [e["data"] for e in events if e["event"] == "events.gap"]
                assert gaps and all(g["reason"] == "retention" for g in gaps)
                assert sum(e["event"] == "turn.delta" for e in events) < 20000 and events[-1]["event"] == "turn.completed"
            else:
                assert out.rstrip(b"\n").endswith(b"\n" + b"x" * 20000), out[-100:]
                assert b"folded out of the daemon's log" in err
    finally:
        daemon.kill()


async def _wait_turn_end(state: Path, tid: str) -> None:
    async with client_for(state) as client:
        await wait_event(client, tid, of_type("turn.completed"))
