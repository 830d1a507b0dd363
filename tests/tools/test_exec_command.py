"""exec_command on real processes: Codex's report, exit codes and signals, workdir and shell,
yielding a session, output clipping, and nothing left running afterwards."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import trio

from echsd.tools.base import ToolError
from echsd.tools.exec_command import ExecCommand
from echsd.tools.process import tool_processes
from echsd.tools.sessions import ExecSessionManager
from echsd.tools.write_stdin import WriteStdin
from tests.tools.exec_helpers import alive, context, escaped, escaping_command, marker, processes_with, wait_until

REPORT = re.compile(
    r"^Chunk ID: [0-9a-f]{6}\nWall time: \d+\.\d{4} seconds\n(?P<status>[^\n]+)\nOriginal token count: \d+\n"
    r"(?P<notes>(?:Note: [^\n]*\n)*)Output:\n(?P<output>.*)\Z",
    re.S,
)


def parse(output: str) -> re.Match[str]:
    found = REPORT.match(output)
    assert found, output
    return found


async def test_exit_code_and_output_in_codex_format(tmp_path: Path) -> None:
    chunks: list[str] = []
    result = await ExecCommand(ExecSessionManager()).run({"cmd": "echo out; echo err >&2; exit 3"}, context(tmp_path, chunks))
    report = parse(result.output)
    assert report["status"] == "Process exited with code 3"
    assert report["output"] == "out\nerr\n"
    assert result.ok is False and result.meta == {"exit_code": 3, "signal": None, "session_id": None}
    assert "".join(chunks) == "out\nerr\n"
    assert tool_processes().live == {}


async def test_signal_is_reported_as_such(tmp_path: Path) -> None:
    result = await ExecCommand(ExecSessionManager()).run({"cmd": "echo bye; kill -TERM $$"}, context(tmp_path))
    assert parse(result.output)["status"] == "Process killed by signal 15 (SIGTERM)"
    assert result.meta["signal"] == 15 and result.meta["exit_code"] is None and result.ok is False


async def test_workdir_shell_login_and_bad_values(tmp_path: Path) -> None:
    tool = ExecCommand(ExecSessionManager())
    (tmp_path / "sub").mkdir()
    result = await tool.run({"cmd": "pwd", "workdir": "sub"}, context(tmp_path))
    assert parse(result.output)["output"].strip() == str(tmp_path / "sub")
    result = await tool.run({"cmd": "shopt -q login_shell && echo login || echo plain"}, context(tmp_path))
    assert parse(result.output)["output"].strip() == "login"  # the default, as Codex: the user's profile applies
    result = await tool.run({"cmd": "shopt -q login_shell && echo login || echo plain", "login": False}, context(tmp_path))
    assert parse(result.output)["output"].strip() == "plain"
    assert "Defaults to true" not in tool.spec.to_model(custom_tools=True)["description"]
    assert "True (the default)" in tool.spec.to_model(custom_tools=True)["parameters"]["properties"]["login"]["description"]
    result = await tool.run({"cmd": "echo $0", "shell": "sh"}, context(tmp_path))
    assert parse(result.output)["output"].strip() == shutil.which("sh")
    with pytest.raises(ToolError, match="not an existing directory"):
        await tool.run({"cmd": "pwd", "workdir": "nope"}, context(tmp_path))
    with pytest.raises(ToolError, match="empty"):
        await tool.run({"cmd": "  "}, context(tmp_path))
    with pytest.raises(ToolError, match="shell 'no-such-shell' was not found"):
        await tool.run({"cmd": "true", "shell": "no-such-shell"}, context(tmp_path))


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"yield_time_ms": -1}, "yield_time_ms must not be negative"),
        ({"max_output_tokens": 0}, "max_output_tokens must be at least 1"),
        ({"max_output_tokens": -5}, "max_output_tokens must be at least 1"),
        ({"yield_time_ms": float("nan")}, "yield_time_ms must be a number"),
    ],
)
async def test_malformed_limits_are_refused(arguments: dict[str, object], message: str, tmp_path: Path) -> None:
    with pytest.raises(ToolError, match=message):
        await ExecCommand(ExecSessionManager()).run({"cmd": "true", **arguments}, context(tmp_path))


async def test_codex_only_fields_are_accepted(tmp_path: Path) -> None:
    """Escalation is the tool runner's to ask for (tests/sandbox); the tool takes the fields."""
    arguments = {
        "cmd": "echo hi",
        "sandbox_permissions": "require_escalated",
        "justification": "Do you want to run this?",
        "prefix_rule": ["echo"],
        "yield_time_ms": 120_000,
        "max_output_tokens": 12_000,
    }
    result = await ExecCommand(ExecSessionManager()).run(arguments, context(tmp_path))
    report = parse(result.output)
    assert report["notes"] == ""
    assert report["status"] == "Process exited with code 0" and report["output"] == "hi\n"


async def test_long_command_yields_a_session_then_reports_its_exit(tmp_path: Path) -> None:
    manager = ExecSessionManager()
    result = await ExecCommand(manager).run({"cmd": "echo started; sleep 1.5; echo finished", "yield_time_ms": 1000}, context(tmp_path))
    report = parse(result.output)
    session_id = result.meta["session_id"]
    assert report["status"] == f"Process running with session ID {session_id}" and result.ok
    assert report["output"] == "started\n"
    with trio.fail_after(10):
        await manager.sessions[session_id].finished.wait()
    # output that arrived between the calls was kept for the poll
    polled = await WriteStdin(manager).run({"session_id": session_id}, context(tmp_path))
    assert parse(polled.output)["status"] == "Process exited with code 0"
    assert parse(polled.output)["output"] == "finished\n"
    with pytest.raises(ToolError, match=f"session {session_id} is gone: its process exited"):
        await WriteStdin(manager).run({"session_id": session_id}, context(tmp_path))


async def test_yield_is_clamped_to_codex_minimum(tmp_path: Path) -> None:
    manager = ExecSessionManager()
    result = await ExecCommand(manager).run({"cmd": "sleep 30", "yield_time_ms": 0}, context(tmp_path))
    wall = float(re.search(r"Wall time: (\d+\.\d+) seconds", result.output).group(1))  # type: ignore[union-attr]
    assert result.meta["session_id"] is not None and wall >= 0.25  # waited 250 ms, not 0
    await manager.close("test over")


async def test_leftovers_are_killed_when_the_command_exits(tmp_path: Path) -> None:
    mark = f"sleep 71.{marker()}"
    result = await ExecCommand(ExecSessionManager()).run({"cmd": f"({mark} &) ; echo done"}, context(tmp_path))
    assert result.meta["exit_code"] == 0 and "done" in result.output
    assert processes_with(mark) == []


async def test_cancellation_kills_the_command_and_what_it_started(tmp_path: Path) -> None:
    command, markers = escaping_command(["setsid", "sh-background"], then="echo go; sleep 60")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(ExecCommand(ExecSessionManager()).run, {"cmd": command}, context(tmp_path))
        await wait_until(lambda: escaped(markers))
        nursery.cancel_scope.cancel()
    assert alive(markers) == []
    assert tool_processes().live == {}


async def test_large_output_is_clipped_by_tokens_keeping_head_and_tail(tmp_path: Path) -> None:
    result = await ExecCommand(ExecSessionManager()).run({"cmd": "seq 1 200000", "max_output_tokens": 500}, context(tmp_path))
    report = parse(result.output)
    assert len(report["output"].encode()) < 500 * 4 + 200
    assert report["output"].startswith("Total output lines: 200000\n\n1\n2\n")
    assert re.search(r"…\d+ tokens truncated…", report["output"])
    assert report["output"].endswith("199999\n200000\n")
    assert "Original token count: 322224" in result.output  # 1,288,895 bytes / 4, rounded up


async def test_max_output_tokens_cannot_lift_the_ceiling(tmp_path: Path) -> None:
    result = await ExecCommand(ExecSessionManager()).run({"cmd": "seq 1 200000", "max_output_tokens": 10**9}, context(tmp_path))
    assert len(parse(result.output)["output"].encode()) < 10_000 * 4 + 200


async def test_pipes_session_has_no_stdin(tmp_path: Path) -> None:
    manager = ExecSessionManager()
    assert (await ExecCommand(manager).run({"cmd": "cat", "yield_time_ms": 250}, context(tmp_path))).meta["exit_code"] == 0  # EOF at once
    result = await ExecCommand(manager).run({"cmd": "sleep 30", "yield_time_ms": 250}, context(tmp_path))
    with pytest.raises(ToolError, match="started without a tty, so its stdin is closed"):
        await WriteStdin(manager).run({"session_id": result.meta["session_id"], "chars": "x\n"}, context(tmp_path))
    await manager.close("test over")
