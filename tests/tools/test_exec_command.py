"""exec_command on real processes: exit codes, output, timeouts, process groups."""

from __future__ import annotations

import uuid
from pathlib import Path


import pytest
import trio

from echsd.tools.base import ToolContext, ToolError
from echsd.tools.exec_command import ExecCommand
from echsd.tools.process import live_groups
from tests.threads.test_control import processes_with


def context(cwd: Path, chunks: list[str], timeout_s: float = 30.0) -> ToolContext:
    async def sink(stream: str, chunk: str) -> None:
        chunks.append(chunk)

    return ToolContext("thr_0000000000000000", "turn_x", "call_x", cwd, sink, timeout_s)


async def test_exit_code_and_output(tmp_path: Path) -> None:
    chunks: list[str] = []
    result = await ExecCommand().run({"cmd": "echo out; echo err >&2; exit 3"}, context(tmp_path, chunks))
    assert result.ok is False and result.meta["exit_code"] == 3
    assert result.output.startswith("Exit code: 3\n")
    assert "out" in result.output and "err" in result.output
    assert "out" in "".join(chunks)


async def test_workdir_and_errors(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    result = await ExecCommand().run({"cmd": "pwd", "workdir": "sub"}, context(tmp_path, []))
    assert str(tmp_path / "sub") in result.output
    with pytest.raises(ToolError, match="not an existing directory"):
        await ExecCommand().run({"cmd": "pwd", "workdir": "nope"}, context(tmp_path, []))
    with pytest.raises(ToolError, match="empty"):
        await ExecCommand().run({"cmd": "  "}, context(tmp_path, []))


async def test_timeout_kills_whole_group_including_background_children(tmp_path: Path) -> None:
    marker = f"sleep 70.{uuid.uuid4().int % 10**9:09d}"
    result = await ExecCommand().run({"cmd": f"{marker} & {marker}", "timeout_ms": 300}, context(tmp_path, []))
    assert result.meta["timed_out"] is True
    assert result.output.startswith("Timed out after 0.3 s")
    assert processes_with(marker) == []
    assert not live_groups


async def test_background_leftovers_are_killed_after_exit(tmp_path: Path) -> None:
    marker = f"sleep 71.{uuid.uuid4().int % 10**9:09d}"
    result = await ExecCommand().run({"cmd": f"({marker} &) ; echo done"}, context(tmp_path, []))
    assert result.meta["exit_code"] == 0 and "done" in result.output
    assert processes_with(marker) == []


async def test_cancellation_kills_group(tmp_path: Path) -> None:
    marker = f"sleep 72.{uuid.uuid4().int % 10**9:09d}"
    chunks: list[str] = []
    ready = trio.Event()

    async def sink(stream: str, chunk: str) -> None:
        chunks.append(chunk)
        ready.set()

    ctx = ToolContext("thr_0000000000000000", "t", "c", tmp_path, sink, 30.0)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(ExecCommand().run, {"cmd": f"echo go; {marker}"}, ctx)
        with trio.fail_after(5):
            await ready.wait()
        assert processes_with(marker)
        nursery.cancel_scope.cancel()
    assert processes_with(marker) == []


async def test_large_output_is_truncated_for_the_model(tmp_path: Path) -> None:
    result = await ExecCommand().run({"cmd": "seq 1 200000", "max_output_chars": 2000}, context(tmp_path, []))
    assert len(result.output) < 2200
    assert "truncated" in result.output
    assert result.output.rstrip().endswith("200000")


