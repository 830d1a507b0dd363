"""Tool processes do not outlive a daemon killed with SIGKILL: the next start kills them,
for every containment mechanism (a driver script stands in for the daemon where the
daemon itself is not needed)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import trio

from echsd.tools import containment, containment_probe, procfs
from echsd.tools.groups import GroupRegistry

from echsd.wire.client import connect
from tests.helpers import mock_directive
from tests.threads.test_control import processes_with, unique_sleep
from tests.tools.exec_helpers import alive, available_mechanisms, escaped, escaping_command
from tests.wire.helpers import ServeProcess


async def test_restart_kills_process_groups_left_by_a_killed_daemon(tmp_path: Path) -> None:
    state = tmp_path / "state"
    work = tmp_path / "work"
    work.mkdir()
    marker = unique_sleep()
    first = ServeProcess(state)
    try:
        async with connect(state_dir=state) as client:
            tid = (await client.create_thread(cwd=str(work)))["thread_id"]
            call = {"name": "exec_command", "arguments": {"cmd": f"echo ready; {marker}"}}
            async with client.events(tid) as events:
                await client.send(tid, mock_directive([{"calls": [call]}]))
                with trio.fail_after(15):
                    async for event in events:
                        if event["event"] == "tool.output":
                            break
    finally:
        first.process.send_signal(signal.SIGKILL)
        first.process.wait(15)
    assert processes_with(marker), "the command should survive its daemon's SIGKILL"
    leaders = [int(entry.name) for entry in (state / "run" / "groups").iterdir()]
    assert leaders

    second = ServeProcess(state)  # ready only after leftovers are gone
    try:
        assert processes_with(marker) == []
        assert not list((state / "run" / "groups").iterdir())
        reap_adopted(first.process.pid, leaders)
        async with connect(state_dir=state) as client:
            history = await client.history(tid)
        assert history[-1]["type"] == "function_call_output"
        assert "restarted" in history[-1]["output"]
    finally:
        assert second.stop() == 0


def sigkilled_driver(registry_dir: Path, mechanism: str, command: str, markers: list[str]) -> int:
    """Run ``command`` in the driver (a stand-in daemon), wait until its escapes run, SIGKILL
    the driver; returns the driver's pid."""
    driver = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("leftover_driver.py")), str(registry_dir), mechanism, command],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert driver.stdout is not None
        assert driver.stdout.readline().startswith("SESSION "), "the driver did not start its command"
        deadline = time.monotonic() + 10
        while not escaped(markers):  # the escapes run in the background of the command
            assert time.monotonic() < deadline, "the escapes never started"
            time.sleep(0.01)
    finally:
        driver.send_signal(signal.SIGKILL)
        driver.wait(15)
        if driver.stdout is not None:
            driver.stdout.close()
    assert escaped(markers), "the commands should survive their daemon's SIGKILL"
    return driver.pid


@pytest.mark.parametrize("mechanism", [containment.CGROUP, containment.PIDNS, containment.PROCESS_GROUP])
def test_next_start_kills_what_a_sigkilled_process_left(mechanism: str, tmp_path: Path) -> None:
    if available_mechanisms()[mechanism] is None:
        pytest.skip(f"{mechanism} containment is not available here")
    # process groups only contain children that stay in the group
    escapes = ["sh-background"] if mechanism == containment.PROCESS_GROUP else ["setsid", "perl-setpgrp", "double-fork", "sh-background"]
    command, markers = escaping_command(escapes, then="sleep 60")
    registry_dir = tmp_path / "groups"
    driver_pid = sigkilled_driver(registry_dir, mechanism, command, markers)
    assert list(registry_dir.iterdir())

    leaders = [int(entry.name) for entry in registry_dir.iterdir()]
    assert GroupRegistry(registry_dir).kill_leftovers() == 1  # what the next start does
    deadline = time.monotonic() + 5
    while alive(markers) and time.monotonic() < deadline:  # killed; /proc may lag a moment
        time.sleep(0.01)
    assert alive(markers) == []
    assert not list(registry_dir.iterdir())
    reap_adopted(driver_pid, leaders)


def reap_adopted(driver_pid: int, leaders: list[int]) -> None:
    """The dead driver's commands were adopted by this test process (a subreaper; a real
    daemon's predecessor's orphans go to the service manager instead): reap them once
    killed, so they do not outlive the test as zombies."""

    def adopted(pid: int, stat: procfs.ProcStat) -> bool:
        return stat.pgrp in leaders or f"/echsd-{driver_pid}-" in (procfs.cgroup_of(pid) or "")

    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        procfs.reap_zombies(adopted)
        if not any(adopted(pid, stat) for pid in procfs.children_of("self") if (stat := procfs.proc_stat(pid))):
            return
        time.sleep(0.01)


def test_sweep_kills_cgroups_of_dead_daemons_without_a_registry(tmp_path: Path) -> None:
    if available_mechanisms()[containment.CGROUP] is None:
        pytest.skip("cgroup containment is not available here")
    command, markers = escaping_command(["setsid", "double-fork"], then="sleep 60")
    pid = sigkilled_driver(tmp_path / "groups", containment.CGROUP, command, markers)
    own = containment_probe.own_cgroup()
    assert own is not None
    assert containment_probe.sweep_dead_daemon_cgroups(own[0]) >= 1
    assert alive(markers) == []
    assert not list(own[0].glob(f"echsd-{pid}-*"))
    reap_adopted(pid, [])
