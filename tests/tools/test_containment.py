"""Containment on real processes: commands that setsid, setpgrp, double-fork or background
their children are killed by interrupt, close, their own exit and shutdown, for every
mechanism that works here; process groups alone contain only well-behaved children."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Awaitable, Callable

import pytest
import trio

from echsd.tools import containment, containment_probe
from echsd.tools.process import shell_argv
from echsd.tools.sessions import ExecRequest, ExecSessionManager
from tests.tools.exec_helpers import alive, available_mechanisms, escaped, escaping_command, table_for, until_escaped, wait_until

ALL_ESCAPES = ["setsid", "perl-setpgrp", "double-fork", "sh-background"]


def request(command: str, tmp_path: Path, yield_s: float = 0.3) -> ExecRequest:
    return ExecRequest(shell_argv(command), str(tmp_path), False, yield_s, 1000, command)


async def no_output(text: str) -> None:
    return None


async def interrupt(manager: ExecSessionManager, table: Any) -> None:
    await manager.turn_ended("turn_1", interrupted=True)


async def close(manager: ExecSessionManager, table: Any) -> None:
    await manager.close("the thread was killed")


async def shutdown(manager: ExecSessionManager, table: Any) -> None:
    table.kill_all()  # the daemon's net; the session tasks then empty and unregister
    for session in list(manager.sessions.values()):
        with trio.fail_after(5):
            await session.finished.wait()


TRIGGERS: dict[str, Callable[[ExecSessionManager, Any], Awaitable[None]]] = {
    "interrupt": interrupt,
    "close": close,
    "shutdown": shutdown,
}


@pytest.mark.parametrize("trigger", list(TRIGGERS))
@pytest.mark.parametrize("mechanism", [containment.CGROUP, containment.PIDNS])
async def test_escapes_are_killed(mechanism: str, trigger: str, tmp_path: Path) -> None:
    table = table_for(mechanism)
    manager = ExecSessionManager(processes=table)
    command, markers = escaping_command(ALL_ESCAPES, then="sleep 60")
    report = await manager.exec_command(request(command, tmp_path), turn_id="turn_1", emit=no_output)
    assert report.session_id is not None, report.render()
    await wait_until(lambda: escaped(markers))
    await TRIGGERS[trigger](manager, table)
    assert alive(markers) == []
    assert table.live == {}
    assert all(session.finished.is_set() for session in manager.sessions.values())


@pytest.mark.parametrize("mechanism", [containment.CGROUP, containment.PIDNS])
async def test_escapes_die_with_the_command_that_started_them(mechanism: str, tmp_path: Path) -> None:
    table = table_for(mechanism)
    manager = ExecSessionManager(processes=table)
    command, markers = escaping_command(ALL_ESCAPES, then="")
    command += f"{until_escaped(markers)}; echo done"  # the command exits once they all run
    report = await manager.exec_command(request(command, tmp_path, yield_s=10), turn_id="turn_1", emit=no_output)
    assert report.exit_code == 0 and "done" in report.render()
    assert alive(markers) == []
    assert table.live == {}


@pytest.mark.parametrize("mechanism", [containment.CGROUP, containment.PIDNS, containment.PROCESS_GROUP])
async def test_cancelled_call_kills_its_command(mechanism: str, tmp_path: Path) -> None:
    table = table_for(mechanism)
    manager = ExecSessionManager(processes=table)
    escapes = ["sh-background"] if mechanism == containment.PROCESS_GROUP else ALL_ESCAPES
    command, markers = escaping_command(escapes, then="sleep 60")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: manager.exec_command(request(command, tmp_path, yield_s=30), turn_id="turn_1", emit=no_output))
        await wait_until(lambda: escaped(markers))
        nursery.cancel_scope.cancel()
    assert alive(markers) == []
    assert table.live == {} and manager.sessions == {}


@pytest.mark.parametrize("trigger", list(TRIGGERS))
async def test_process_groups_contain_children_that_stay_in_the_group(trigger: str, tmp_path: Path) -> None:
    table = table_for(containment.PROCESS_GROUP)
    manager = ExecSessionManager(processes=table)
    command, markers = escaping_command(["sh-background"], then="sleep 60")
    report = await manager.exec_command(request(command, tmp_path), turn_id="turn_1", emit=no_output)
    assert report.session_id is not None
    await wait_until(lambda: escaped(markers))
    await TRIGGERS[trigger](manager, table)
    assert alive(markers) == []


def test_detection_picks_the_best_mechanism_that_works() -> None:
    found = containment_probe.detect_containment()
    try:
        working = [name for name, mechanism in available_mechanisms().items() if mechanism is not None]
        assert found.name == working[0]
    finally:
        found.close()


def test_launcher_refuses_to_run_outside_its_cgroup(tmp_path: Path) -> None:
    import subprocess

    argv = containment.launcher(["echo", "ran"], cgroup_procs=str(tmp_path / "missing" / "cgroup.procs"), tty_path=None)
    result = subprocess.run(argv, capture_output=True, text=True)
    assert result.returncode == 126
    assert "ran" not in result.stdout and "cannot enter cgroup" in result.stderr


def test_cgroup_names_are_unique_across_containment_instances() -> None:
    found = available_mechanisms()[containment.CGROUP]
    if not isinstance(found, containment.CgroupContainment):
        pytest.skip("cgroup containment is not available here")
    other = containment.CgroupContainment(found.parent, found.parent_id)
    first, second = found.prepare(["true"]), other.prepare(["true"])
    try:
        assert first.cgroup != second.cgroup and first.cgroup_id != second.cgroup_id
    finally:
        first.abandon()
        second.abandon()
