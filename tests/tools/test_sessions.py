"""Interactive sessions end to end (real ptys) and the per-thread manager: turns, close,
the cap, streaming, cancellation of a poll."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import trio
import trio.testing

from echsd.tools.base import ToolError
from echsd.tools.exec_command import ExecCommand
from echsd.tools.sessions import ExecSessionManager
from echsd.tools.write_stdin import WriteStdin
from tests.tools.exec_helpers import context, marker, processes_with, table_for


def output_of(text: str) -> str:
    return text.split("\nOutput:\n", 1)[1]


async def start(manager: ExecSessionManager, cmd: str, tmp_path: Path, turn_id: str = "turn_1", **extra: object) -> int:
    result = await ExecCommand(manager).run({"cmd": cmd, "yield_time_ms": 250, **extra}, context(tmp_path, turn_id=turn_id))
    session_id = result.meta["session_id"]
    assert isinstance(session_id, int), result.output
    return session_id


async def test_interactive_python_session(tmp_path: Path) -> None:
    manager = ExecSessionManager()
    exec_command, write_stdin = ExecCommand(manager), WriteStdin(manager)
    chunks: list[str] = []
    started = await exec_command.run({"cmd": "python3 -i", "tty": True, "yield_time_ms": 500}, context(tmp_path, chunks))
    session_id = started.meta["session_id"]
    assert f"Process running with session ID {session_id}" in started.output
    answer = await write_stdin.run({"session_id": session_id, "chars": "print(6*7)\n", "yield_time_ms": 1000}, context(tmp_path, chunks))
    assert re.search(r"^42\r?$", output_of(answer.output), re.M), answer.output
    assert answer.meta["session_id"] == session_id
    ended = await write_stdin.run({"session_id": session_id, "chars": "exit()\n", "yield_time_ms": 5000}, context(tmp_path))
    assert "Process exited with code 0" in ended.output and ended.meta == {"exit_code": 0, "signal": None, "session_id": None}
    assert "42" in "".join(chunks)  # streamed to clients while the call waited
    assert manager.sessions == {}


async def test_ctrl_c_reaches_the_pty_foreground(tmp_path: Path) -> None:
    manager = ExecSessionManager()
    session_id = await start(manager, "python3 -i", tmp_path, tty=True)
    await WriteStdin(manager).run({"session_id": session_id, "chars": "import time; time.sleep(60)\n"}, context(tmp_path))
    interrupted = await WriteStdin(manager).run({"session_id": session_id, "chars": "\x03", "yield_time_ms": 2000}, context(tmp_path))
    assert "KeyboardInterrupt" in interrupted.output
    await manager.close("test over")


async def test_interrupted_turn_kills_only_its_sessions(tmp_path: Path) -> None:
    manager = ExecSessionManager()
    earlier_mark, later_mark = f"sleep 61.{marker()}", f"sleep 62.{marker()}"
    earlier = await start(manager, earlier_mark, tmp_path, turn_id="turn_1")
    await manager.turn_ended("turn_1", interrupted=False)
    later = await start(manager, later_mark, tmp_path, turn_id="turn_2")
    await manager.turn_ended("turn_2", interrupted=True)
    assert processes_with(later_mark) == [] and processes_with(earlier_mark)
    with pytest.raises(ToolError, match=f"session {later} is gone: the turn that started it was interrupted"):
        await WriteStdin(manager).run({"session_id": later}, context(tmp_path))
    assert list(manager.sessions) == [earlier]
    await manager.close("the thread was paused")
    assert processes_with(earlier_mark) == []
    with pytest.raises(ToolError, match="gone: the thread was paused"):
        await WriteStdin(manager).run({"session_id": earlier}, context(tmp_path))
    assert isinstance(await start(manager, "sleep 30", tmp_path), int)  # still usable after close
    await manager.close("test over")


async def test_cap_closes_the_least_recently_used_idle_session(tmp_path: Path) -> None:
    manager = ExecSessionManager(max_sessions=2)
    first = await start(manager, "sleep 60", tmp_path)
    second = await start(manager, "sleep 61", tmp_path)
    await WriteStdin(manager).run({"session_id": first, "yield_time_ms": 0}, context(tmp_path, timeout_s=0.3))  # first is now the recent one
    third = await ExecCommand(manager).run({"cmd": "sleep 62", "yield_time_ms": 250}, context(tmp_path))
    assert f"Note: session {second} (`sleep 61`) was still running; it was killed and was closed" in third.output
    assert sorted(manager.sessions) == sorted([first, third.meta["session_id"]])
    with pytest.raises(ToolError, match="closed to make room for a new session"):
        await WriteStdin(manager).run({"session_id": second}, context(tmp_path))
    await manager.close("test over")


async def test_cancelled_poll_leaves_the_session_running(tmp_path: Path) -> None:
    manager = ExecSessionManager()
    session_id = await start(manager, "sleep 60", tmp_path)
    with trio.move_on_after(0.2):
        await WriteStdin(manager).run({"session_id": session_id, "yield_time_ms": 30_000}, context(tmp_path))
    assert not manager.sessions[session_id].finished.is_set()
    await manager.close("test over")


async def test_buffer_between_polls_is_bounded(tmp_path: Path) -> None:
    manager = ExecSessionManager()
    # the output starts after the call has yielded, so all of it arrives between polls
    session_id = await start(manager, "sleep 1; head -c 5000000 /dev/zero | tr '\\0' a; echo; echo the-end", tmp_path)
    session = manager.sessions[session_id]
    with trio.fail_after(10):
        await session.finished.wait()
    assert len(session.buffer.head) + len(session.buffer.tail) <= 2 * session.buffer.half
    polled = await WriteStdin(manager).run({"session_id": session_id}, context(tmp_path))
    assert f"Original token count: {-(-5_000_009 // 4)}" in polled.output
    assert output_of(polled.output).endswith("aaaa\nthe-end\n") and "tokens truncated" in polled.output


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"session_id": 1.5}, "session_id must be the integer"),
        ({"session_id": 424242}, "unknown session_id 424242"),
        ({"session_id": 1, "max_output_tokens": 0}, "max_output_tokens must be at least 1"),
        ({"session_id": 1, "yield_time_ms": -3}, "yield_time_ms must not be negative"),
    ],
)
async def test_malformed_write_stdin_arguments(arguments: dict[str, object], message: str, tmp_path: Path) -> None:
    with pytest.raises(ToolError, match=message):
        await WriteStdin(ExecSessionManager()).run(arguments, context(tmp_path))


async def test_pty_output_is_complete_when_the_command_exits_at_once(tmp_path: Path) -> None:
    result = await ExecCommand(ExecSessionManager()).run({"cmd": "seq 1 20000", "tty": True}, context(tmp_path))
    assert result.meta["exit_code"] == 0
    assert output_of(result.output).rstrip().endswith("19999\r\n20000")


@pytest.mark.parametrize("mechanism", ["cgroup", "pidns", "process-group"])
async def test_a_closed_session_reports_its_sigkill(mechanism: str, tmp_path: Path) -> None:
    manager = ExecSessionManager(processes=table_for(mechanism))
    session_id = await start(manager, "sleep 60", tmp_path)
    results = []

    async def poll() -> None:
        results.append(await WriteStdin(manager).run({"session_id": session_id, "yield_time_ms": 30_000}, context(tmp_path)))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(poll)
        await trio.testing.wait_all_tasks_blocked()
        await manager.close("the daemon is stopping")
    assert "Process killed by signal 9 (SIGKILL)" in results[0].output
    assert "Note: the session was closed: the daemon is stopping" in results[0].output
