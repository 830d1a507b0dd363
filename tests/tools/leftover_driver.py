"""Run by test_leftovers.py: a stand-in for a daemon that ran commands and is then SIGKILLed.

Usage: leftover_driver.py REGISTRY_DIR MECHANISM COMMAND. Starts COMMAND as an exec session
with the named containment and an on-disk registry, prints ``SESSION <id>`` and waits to be
killed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import trio

from echsd.tools import containment, containment_probe
from echsd.tools.groups import GroupRegistry
from echsd.tools.process import ToolProcesses, become_subreaper, shell_argv
from echsd.tools.sessions import ExecRequest, ExecSessionManager

PROBES = {
    containment.CGROUP: containment_probe.probe_cgroup,
    containment.PIDNS: containment_probe.probe_pid_namespace,
    containment.PROCESS_GROUP: containment.Containment,
}


async def main(registry_dir: str, mechanism: str, command: str) -> None:
    become_subreaper()
    found = PROBES[mechanism]()
    assert found is not None, f"{mechanism} is not available"
    manager = ExecSessionManager(processes=ToolProcesses(found, GroupRegistry(Path(registry_dir))))

    async def ignore(text: str) -> None:
        return None

    request = ExecRequest(shell_argv(command), "/", False, 0.25, 100, command)
    report = await manager.exec_command(request, turn_id="turn_1", emit=ignore)
    print(f"SESSION {report.session_id}", flush=True)
    await trio.sleep_forever()


if __name__ == "__main__":
    trio.run(main, *sys.argv[1:4])
