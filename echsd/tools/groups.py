"""Remember every live tool enclosure on disk, so a crashed daemon's leftovers die too.

A tool command outlives a daemon killed with SIGKILL (it has its own session, maybe its own
cgroup or PID namespace), and nobody would ever stop it. Each enclosure therefore gets a
small file, ``<dir>/<leader pid>``, holding the boot id, the leader's start time, the
mechanism and, for ``cgroup``, the cgroup directory; the file goes when the enclosure has
been emptied. At start the daemon kills everything a previous run left behind:

- ``cgroup``: the whole cgroup (``cgroup.kill``), whatever became of the leader, then the
  directory is removed;
- ``pidns``: the namespace's init (the kernel then empties the namespace), and the
  leader's group;
- ``process-group`` (and files written before mechanisms were recorded): the group.

The boot id and start time make sure a recycled pid is never mistaken for ours: a group is
killed only if its leader is still the very process we started or, with the leader gone, if
members remain (the kernel does not reuse a pid while it still names a process group).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from echsd.logs import get_logger
from echsd.tools import procfs
from echsd.tools.containment import CGROUP, PIDNS, PROCESS_GROUP, Enclosure, destroy_cgroup, kill_namespace_init

log = get_logger(__name__)


@dataclass(frozen=True)
class Record:
    leader: int
    boot_id: str
    start_time: str
    mechanism: str
    cgroup: Path | None

    @classmethod
    def parse(cls, leader: int, text: str) -> "Record | None":
        fields = text.split(maxsplit=3)
        if len(fields) < 2:
            return None
        mechanism = fields[2] if len(fields) > 2 else PROCESS_GROUP
        cgroup = Path(fields[3].strip()) if len(fields) > 3 else None
        return cls(leader, fields[0], fields[1], mechanism, cgroup)

    def render(self) -> str:
        tail = f" {self.cgroup}" if self.cgroup is not None else ""
        return f"{self.boot_id} {self.start_time} {self.mechanism}{tail}\n"


class GroupRegistry:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.boot_id = procfs.boot_id()
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)

    def add(self, enclosure: Enclosure) -> None:
        record = Record(
            enclosure.leader,
            self.boot_id,
            str(procfs.start_time(enclosure.leader)),
            enclosure.mechanism,
            enclosure.cgroup,
        )
        try:
            (self.directory / str(enclosure.leader)).write_text(record.render())
        except OSError as exc:  # bookkeeping must never stop a tool from running
            log.warning("cannot record tool process", pid=enclosure.leader, error=str(exc))

    def remove(self, enclosure: Enclosure) -> None:
        try:
            (self.directory / str(enclosure.leader)).unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            log.warning("cannot forget tool process", pid=enclosure.leader, error=str(exc))

    def kill_leftovers(self) -> int:
        """Kill what a previous daemon left running; returns how many enclosures were hit."""
        killed = 0
        for entry in self.directory.iterdir():
            if not entry.name.isdigit():
                continue
            try:
                record = Record.parse(int(entry.name), entry.read_text())
            except OSError:
                record = None
            if record is not None and record.boot_id == self.boot_id and _kill(record):
                killed += 1
            entry.unlink(missing_ok=True)
        if killed:
            log.warning("killed tool processes left by a previous run", enclosures=killed)
        return killed


def _kill(record: Record) -> bool:
    leader_is_ours = str(procfs.start_time(record.leader)) == record.start_time
    if record.mechanism == CGROUP and record.cgroup is not None:
        if not record.cgroup.is_dir():
            return False
        if leader_is_ours:
            procfs.kill_quietly(record.leader, group=True)
        destroy_cgroup(record.cgroup)
        return True
    if leader_is_ours:
        if record.mechanism == PIDNS:
            kill_namespace_init(record.leader)
        procfs.kill_quietly(record.leader, group=True)
        return True
    if procfs.proc_stat(record.leader) is None and procfs.group_members(record.leader):
        procfs.kill_quietly(record.leader, group=True)
        return True
    return False
