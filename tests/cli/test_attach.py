"""``echs attach`` in a real terminal (tmux): the live view, a queued message, a steer, Ctrl-C,
Ctrl-D, a reattach that shows recent history and goes on live, and a parent's view of its
sub-agents (with ``echs tree`` drawing them). The screen is polled with a deadline; what
happened on the thread is checked through the client library."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Iterator

import pytest

from tests.cli.helpers import ECHS, Serve, Tmux, clean_env, client_for, echs, gate_command, json_lines, new_thread, of_type, wait_event
from tests.helpers import mock_directive, one_event_per_delta
from tests.threads.test_subagents import child_task, spawn, wait

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def gated_turn(gate: Path) -> str:
    return mock_directive(
        [{"text": "on it", "calls": [{"name": "exec_command", "arguments": {"cmd": gate_command(gate)}}]}, {"text": "all done"}]
    )


def prompt_is_up(screen: str, state: str) -> bool:
    """The input line (with nothing typed) is the last line on the screen."""
    lines = [line for line in screen.splitlines() if line.strip()]
    return bool(lines) and lines[-1].rstrip() == f"{state} ›"


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Serve]:
    """The module's daemon, one event per model delta: the tests wait for the words of a
    stream one by one."""
    daemon = Serve(one_event_per_delta(tmp_path_factory.mktemp("attach") / "state"))
    yield daemon
    try:
        daemon.terminate()
    finally:
        daemon.kill()


@pytest.fixture
def terminals(tmp_path: Path) -> Iterator[list[Tmux]]:
    opened: list[Tmux] = []
    yield opened
    for terminal in opened:
        terminal.close()


def attach(terminals: list[Tmux], state: Path, tmp_path: Path, tid: str, *extra: str, ready: str = "idle ›") -> Tmux:
    directory = tmp_path / f"tmux{len(terminals)}"
    directory.mkdir()
    terminal = Tmux(directory, [ECHS, "--state-dir", str(state), "attach", tid, *extra], clean_env(state.parent, TERM="xterm-256color"))
    terminals.append(terminal)
    terminal.wait_for(ready)
    return terminal


async def test_attach_queue_steer_interrupt_detach_reattach(state: Path, tmp_path: Path, terminals: list[Tmux]) -> None:
    tid = new_thread(state)
    screen = attach(terminals, state, tmp_path, tid)
    assert f"attached to {tid}" in screen.screen()

    screen.type("hello attach")
    screen.keys("Enter")
    await screen.await_for("✓ turn completed")
    assert "assistant › mock reply to: hello attach" in screen.screen()

    gate = tmp_path / "gate-steer"
    screen.type(gated_turn(gate))
    screen.keys("Enter")
    await screen.await_for("⚙ exec_command")
    screen.type("!steer this way")
    screen.keys("Enter")
    await screen.await_for("into the running turn")  # the steer is acknowledged: it joins this turn
    gate.touch()
    await screen.await_for(lambda s: s.count("✓ turn completed") == 2)
    text = screen.screen()
    assert "│ gate-open" in text and "✓ exec_command" in text and "you (steer) › steer this way" in text

    screen.type(gated_turn(tmp_path / "gate-never"))
    screen.keys("Enter")
    await screen.await_for(lambda s: s.count("⚙ exec_command") == 2)
    screen.keys("C-c")
    await screen.await_for(lambda s: "⏹ turn interrupted (interrupt)" in s and prompt_is_up(s, "idle"))
    screen.keys("C-d")  # to the prompt: a Ctrl-D typed between two prompts would be lost
    await screen.await_for("EXITED 0")
    assert f"detached from {tid}" in screen.screen()

    async with client_for(state) as client:
        events = await client.thread_events(tid)
        thread = await client.get_thread(tid)
    assert thread["state"] == "idle"  # detaching changed nothing
    delivered = [e["data"] for e in events if e["event"] == "input.delivered"]
    assert [d["mode"] for d in delivered] == ["queue", "queue", "steer", "queue"]
    assert delivered[1]["turn_id"] == delivered[2]["turn_id"]  # the steer joined the running turn
    ended = [e for e in events if e["event"] in ("turn.completed", "turn.interrupted")]
    assert [e["event"] for e in ended] == ["turn.completed", "turn.completed", "turn.interrupted"]
    assert ended[-1]["data"]["reason"] == "interrupt" and ended[-1]["data"]["turn_id"] == delivered[3]["turn_id"]

    again = attach(terminals, state, tmp_path, tid, "--last", "30")
    recent = await again.await_for("⏹ turn interrupted (interrupt)")
    assert "⏹ turn interrupted (interrupt)" in recent and "hello attach" not in recent  # recent events only
    async with client_for(state) as client:
        last = (await client.get_thread(tid))["last_seq"]
        await client.send(tid, mock_directive({"text": "live again"}))
        await wait_event(client, tid, of_type("turn.completed"), since=last)
    await again.await_for("assistant › live again")  # live after the replay
    again.keys("C-d")
    await again.await_for("EXITED 0")


def test_attach_needs_a_terminal(state: Path) -> None:
    tid = new_thread(state)
    result = echs(state, "attach", tid)
    assert result.returncode == 2 and "terminal" in result.stderr


def test_colour_only_on_a_terminal_and_never_with_no_color(state: Path, tmp_path: Path, terminals: list[Tmux]) -> None:
    new_thread(state)
    for name, extra in (("colour", {}), ("plain", {"NO_COLOR": "1"})):
        env = {k: v for k, v in clean_env(state.parent, TERM="xterm-256color").items() if k != "NO_COLOR"} | extra
        directory = tmp_path / name
        directory.mkdir()
        terminal = Tmux(directory, [ECHS, "--state-dir", str(state), "ls"], env)
        terminals.append(terminal)
        terminal.wait_for("EXITED 0")
        coloured = "\x1b[" in terminal.screen(escapes=True).split("EXITED")[0]
        assert coloured is (name == "colour"), name


async def test_attach_shows_a_pending_approval_and_answers_it(state: Path, tmp_path: Path, terminals: list[Tmux]) -> None:
    tid = new_thread(state, "--cwd", str(tmp_path), "--approval", "always")
    calls = [[{"name": "exec_command", "arguments": {"cmd": f"touch {tmp_path / name}"}}] for name in ("said-yes", "said-no")]
    async with client_for(state) as client:
        await client.send(tid, mock_directive([{"calls": calls[0]}, {"calls": calls[1]}, {"text": "finished"}]))
        screen = attach(terminals, state, tmp_path, tid, ready="approve exec_command? [y/n/a] ›")  # from the pending list
        await screen.await_for("⚠ approve exec_command: touch")  # and its event, replayed
        screen.type("y")
        screen.keys("Enter")
        await screen.await_for("approved: exec_command")
        await screen.await_for(lambda text: text.count("⚠ approve exec_command") == 2)
        screen.type("n")
        screen.keys("Enter")
        await screen.await_for("denied: exec_command")
        await wait_event(client, tid, of_type("turn.completed"))
        await screen.await_for("✓ turn completed")
    assert (tmp_path / "said-yes").exists() and not (tmp_path / "said-no").exists()


async def test_attach_a_approves_for_the_thread_and_an_escalation_shows_why(state: Path, tmp_path: Path, terminals: list[Tmux]) -> None:
    """``a`` approves for this thread: the next call with that prefix runs without asking;
    an escalation's request shows the model's justification."""
    tid = new_thread(state, "--cwd", str(tmp_path), "--approval", "always")
    touch = [{"name": "exec_command", "arguments": {"cmd": f"touch {tmp_path / name}", "prefix_rule": ["touch"]}} for name in ("first", "second")]
    escalated = {"cmd": f"mkdir {tmp_path.parent / 'escaped'}", "sandbox_permissions": "require_escalated", "justification": "to leave a note next door"}
    steps = [{"calls": [touch[0]]}, {"calls": [touch[1]]}, {"calls": [{"name": "exec_command", "arguments": escalated}]}, {"text": "finished"}]
    async with client_for(state) as client:
        await client.send(tid, mock_directive(steps))
        screen = attach(terminals, state, tmp_path, tid, ready="approve exec_command? [y/n/a] ›")
        screen.type("a")
        screen.keys("Enter")
        await screen.await_for("approved for this thread (touch runs without asking)")
        await screen.await_for("(why: to leave a note next door)")
        screen.type("n")
        screen.keys("Enter")
        await wait_event(client, tid, of_type("turn.completed"))
    events = json_lines(echs(state, "events", tid, "--json").stdout)
    asked = [event["data"]["summary"] for event in events if event["event"] == "approval.requested"]
    assert len(asked) == 2 and asked[1].startswith("outside the sandbox:"), asked
    assert (tmp_path / "first").exists() and (tmp_path / "second").exists() and not (tmp_path.parent / "escaped").exists()


async def test_attach_shows_the_partial_line_and_elapsed_time_while_a_turn_runs(
    state: Path, tmp_path: Path, terminals: list[Tmux]
) -> None:
    """The stream stalls after two words: they show at once in the status line (with a
    spinner and the turn's elapsed time, ticking), not only when the line completes."""
    tid = new_thread(state)
    screen = attach(terminals, state, tmp_path, tid)
    async with client_for(state) as client:
        await client.send(tid, mock_directive({"text": "alpha beta gamma delta", "fault": "stall", "after_deltas": 2}))
        await wait_event(client, tid, of_type("turn.delta", delta="beta "))
    live = await screen.await_for(lambda s: "running" in s and "assistant › alpha beta" in s)
    assert "✓ turn completed" not in live
    await screen.await_for("running 1s")
    await screen.await_for("running 2s")  # the clock ticks while nothing streams
    screen.keys("C-c")
    done = await screen.await_for(lambda s: "⏹ turn interrupted" in s and prompt_is_up(s, "idle"))
    assert "assistant › alpha beta" in done and "running" not in done.split("⏹ turn interrupted")[1]


async def test_attach_shows_retries(state: Path, tmp_path: Path, terminals: list[Tmux]) -> None:
    import uuid

    tid = new_thread(state)
    screen = attach(terminals, state, tmp_path, tid)
    text = f"came back {uuid.uuid4().hex[:8]}"  # the mock counts a fault's times per script
    async with client_for(state) as client:
        await client.send(tid, mock_directive({"text": text, "fault": "http", "status": 503, "retry_after": 0.05, "times": 2}))
        await wait_event(client, tid, of_type("turn.completed"))
    shown = await screen.await_for(f"assistant › {text}")
    assert "↻ model request failed, retry 1/5 in 0.05s: " in shown and "↻ model request failed, retry 2/5 in 0.05s: " in shown


async def test_attach_says_at_once_when_the_daemon_goes_and_comes_back(tmp_path: Path, terminals: list[Tmux]) -> None:
    from tests.cli.helpers import Serve

    daemon = Serve(tmp_path / "own")
    state = daemon.state_dir
    try:
        tid = new_thread(state)
        screen = attach(terminals, state, tmp_path, tid)
        daemon.kill()  # SIGKILL: no goodbye
        await screen.await_for(lambda s: "lost the connection to the daemon" in s and prompt_is_up(s, "disconnected"))
        daemon.start()
        await screen.await_for(lambda s: "reconnected" in s and prompt_is_up(s, "idle"))
        async with client_for(state) as client:
            await client.send(tid, mock_directive({"text": "after the restart"}))
            await wait_event(client, tid, of_type("turn.completed"))
        await screen.await_for("assistant › after the restart")

        directory = tmp_path / "impatient"
        directory.mkdir()
        impatient = Tmux(directory, [ECHS, "--state-dir", str(state), "--timeout", "1", "attach", tid], clean_env(state.parent, TERM="xterm-256color"))
        terminals.append(impatient)
        impatient.wait_for("idle ›")
        daemon.kill()
        gone = await impatient.await_for("EXITED 1")
        assert "lost the connection to the daemon" in gone and "did not come back within 1 s" in gone
    finally:
        daemon.kill()


async def test_attach_on_a_parent_shows_its_sub_agents_and_tree_draws_them(state: Path, tmp_path: Path, terminals: list[Tmux]) -> None:
    tid = new_thread(state)
    screen = attach(terminals, state, tmp_path, tid)
    task = child_task("look around", "found-it", delay_ms=1, words=2)
    screen.type(mock_directive([{"calls": [spawn(task)]}, {"calls": [wait()]}, {"text": "the child answered"}]))
    screen.keys("Enter")
    await screen.await_for("assistant › the child answered")
    async with client_for(state) as client:
        [child] = (await client.get_thread(tid))["children"]
    text = await screen.await_for(f"↳ {child} completed: found-it w0 w1")
    assert f"↳ spawned {child} (default)" in text
    assert text.index(f"↳ spawned {child}") < text.index(f"↳ {child} completed")
    screen.keys("C-d")
    await screen.await_for("EXITED 0")
    assert echs(state, "tree", tid).stdout.splitlines() == [f"{tid}  idle", f"└─ {child}  idle"]
    assert json.loads(echs(state, "show", child, "--json").stdout)["parent"] == tid
