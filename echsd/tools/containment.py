"""Enclose every tool command so that killing it kills everything it started.

A process group is not a boundary: ``setsid``, ``setpgid`` (perl ``setpgrp``) or a double
fork leaves it, and such a process used to survive interrupt, kill and shutdown. Three
mechanisms, best first; ``detect_containment`` tries each for real, once per daemon, and
keeps the first that works (``containment_probe.py``; ``echs status`` shows its ``name``):

- ``cgroup``: a cgroup v2 directory per command, below a per-daemon directory
  (``echsd-PID-STARTTIME``) in the daemon's own cgroup. A process cannot leave a cgroup
  without write access to an ancestor's ``cgroup.procs``; where it has it (a tree delegated
  to the daemon's user), whatever left its command's cgroup is found and killed by the
  sweep of ``strays.py`` after every command. Killing writes ``cgroup.kill``
  (Linux 5.14+; older kernels: freeze, SIGKILL every member, thaw); the command is gone
  when ``cgroup.events`` says ``populated 0``. The command enters its cgroup through a
  one-line ``sh`` launcher before it execs, so it never runs outside.
- ``pidns``: a PID namespace per command (``unshare --pid --fork --kill-child``, with
  ``--user --map-current-user`` when not root). When the namespace's init dies the kernel
  kills everything in it; ``unshare`` dying kills the init (``--kill-child``). Limitations:
  the init ignores signals it has no handler for, so a Ctrl-C written to a pty session
  whose command is a bare ``sleep`` does nothing (SIGKILL always works); and ``unshare``
  reports a command killed by SIGKILL as exit status 1, with a line of its own on stderr
  (it cannot re-raise SIGKILL); the session manager reports its own kills as SIGKILL.
- ``process-group``: the command's own session and process group only. Anything that
  calls ``setsid``/``setpgid`` escapes and survives interrupt, kill and shutdown. Used
  where neither of the above works, and ``echs status`` says so.

What works where:
- This sandbox, tried: root in a Firecracker VM, kernel 6.18, hybrid v1/v2 hierarchy with
  cgroup2 at ``/sys/fs/cgroup/unified`` and the daemon in the v2 root (``0::/``).
  ``cgroup`` works (mkdir, ``cgroup.procs``, ``cgroup.kill``) and is picked; ``pidns``
  works too, as root and as an unprivileged user (``unshare --user --map-current-user``,
  util-linux 2.38). As user ``nobody`` in a cgroup chowned the way systemd's
  ``Delegate=yes`` chowns one (the directory, its ``cgroup.procs``, ``cgroup.threads`` and
  ``cgroup.subtree_control``), ``cgroup`` is picked and kills setsid escapes; a command
  can then also move itself anywhere in that tree, which the sweep of ``strays.py`` undoes
  (``tests/tools/test_delegation.py`` runs ``echsd serve`` as ``nobody`` in such a tree); as
  ``nobody`` in the root-owned v2 root, ``pidns`` is picked and does the same.
- A systemd user service (``systemd/echsd.service``, ``Delegate=yes``), by systemd's
  delegation rules (not tried here: PID 1 is not systemd): the daemon runs in
  ``/user.slice/user-UID.slice/user@UID.service/app.slice/echsd.service``, owned by its
  user and left alone by systemd, so ``cgroup`` works as in the ``nobody`` case above. No
  controller is enabled below it, so the daemon may stay in that cgroup while its commands
  live in children (the "no internal processes" rule concerns enabled controllers only).
  systemd also kills the whole unit cgroup when the daemon dies.
- A login session without the unit: the terminal's scope under ``user@UID.service`` is
  the user's too, so ``cgroup`` usually works; in a container with a read-only
  ``/sys/fs/cgroup`` it does not, ``pidns`` then needs unprivileged user namespaces (off on
  some distributions, refused by Docker's default seccomp profile), and ``process-group``
  is what is left.

Whatever the mechanism, every enclosure is also written to the on-disk registry
(``groups.py``) so a daemon killed with SIGKILL has its commands killed at the next start.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Collection

import trio

from echsd.logs import get_logger
from echsd.tools import procfs, strays

log = get_logger(__name__)

CGROUP = "cgroup"
PIDNS = "pidns"
PROCESS_GROUP = "process-group"
GONE_BUDGET_S = 2.0  # how long a killed enclosure may take to empty before it is logged


@dataclass
class Enclosure:
    """One command's container: the leader we spawned and, for ``cgroup``, its directory.
    ``kill`` is synchronous so that shutdown paths can call it from anywhere."""

    mechanism: str
    leader: int
    cgroup: Path | None = None

    def kill(self) -> None:
        if self.cgroup is not None:
            kill_cgroup(self.cgroup)
            procfs.kill_quietly(self.leader, group=True)  # killed before it entered the cgroup
        elif self.mechanism == PIDNS:
            if not kill_namespace_init(self.leader):
                procfs.kill_quietly(self.leader, group=True)
        else:
            procfs.kill_quietly(self.leader, group=True)

    def is_empty(self) -> bool:
        if self.cgroup is not None:
            return cgroup_is_empty(self.cgroup)
        if self.mechanism == PIDNS:
            # unshare exits only after reaping the init, which the kernel lets exit only
            # once every other process of the namespace is gone.
            stat = procfs.proc_stat(self.leader)
            return stat is None or stat.zombie
        return procfs.group_is_empty(self.leader)

    async def wait_gone(self) -> None:
        """After ``kill``: wait until nothing of the command is left, then remove its cgroup.
        Bounded: a process stuck in uninterruptible IO is logged, not waited for forever.
        (The orphans reparented to us are reaped by the process table.)"""
        if not await _poll_until(self.is_empty, GONE_BUDGET_S, self.kill):
            log.warning("command still alive after SIGKILL", mechanism=self.mechanism, leader=self.leader)
        if self.cgroup is not None:
            remove_cgroup(self.cgroup)


async def _poll_until(done: Callable[[], bool], budget_s: float, retry: Callable[[], None]) -> bool:
    deadline = trio.current_time() + budget_s
    delay = 0.001
    while not done():
        if trio.current_time() > deadline:
            return False
        retry()
        await trio.sleep(delay)
        delay = min(delay * 2, 0.05)
    return True


def kill_cgroup(path: Path) -> None:
    try:
        (path / "cgroup.kill").write_text("1")
        return
    except FileNotFoundError:
        if not path.exists():
            return
    except OSError as exc:
        log.warning("cgroup.kill failed", cgroup=str(path), error=str(exc))
    _kill_frozen(path)


def _kill_frozen(path: Path) -> None:
    """Kernels before 5.14 have no cgroup.kill: freeze (nothing forks meanwhile), SIGKILL
    every member, thaw."""
    try:
        (path / "cgroup.freeze").write_text("1")
        for pid in (path / "cgroup.procs").read_text().split():
            procfs.kill_quietly(int(pid))
        (path / "cgroup.freeze").write_text("0")
    except OSError as exc:
        log.warning("cannot kill cgroup members", cgroup=str(path), error=str(exc))


def cgroup_is_empty(path: Path) -> bool:
    try:
        return "populated 0" in (path / "cgroup.events").read_text()
    except OSError:
        return True  # removed already


def destroy_cgroup(path: Path) -> None:
    """Kill everything in a cgroup, wait (blocking, bounded) until it is empty, remove it:
    for start-up clean-up, before the event loop serves anyone."""
    kill_cgroup(path)
    deadline = time.monotonic() + GONE_BUDGET_S
    while not cgroup_is_empty(path) and time.monotonic() < deadline:
        time.sleep(0.005)
    remove_cgroup(path)


def remove_cgroup(path: Path) -> None:
    try:
        path.rmdir()
    except FileNotFoundError:
        pass
    except OSError as exc:
        log.warning("cannot remove cgroup", cgroup=str(path), error=str(exc))


def kill_namespace_init(leader: int) -> bool:
    """SIGKILL the namespace's init (``unshare``'s only child), so that ``unshare`` reaps it
    and exits: its exit then means the namespace is empty. False if there is no init yet."""
    children = procfs.children_of(leader)
    for child in children:
        procfs.kill_quietly(child)
    return bool(children)


# --- mechanisms ----------------------------------------------------------------------------


@dataclass
class Prepared:
    """A command line ready to spawn (with ``start_new_session=True``) in an enclosure
    (``cgroup_id``: its cgroup as /proc/PID/cgroup will show it)."""

    argv: list[str]
    mechanism: str
    cgroup: Path | None = None
    cgroup_id: str | None = None

    def enclose(self, leader: int) -> Enclosure:
        return Enclosure(self.mechanism, leader, self.cgroup)

    def abandon(self) -> None:
        """The spawn failed: undo what was prepared."""
        if self.cgroup is not None:
            remove_cgroup(self.cgroup)


def launcher(argv: list[str], *, cgroup_procs: str | None, tty_path: str | None) -> list[str]:
    """Wrap ``argv`` in a ``sh`` one-liner that first enters a cgroup (writing its pid to
    ``cgroup_procs``; it refuses to run the command if that fails) and/or makes ``tty_path``
    its controlling terminal (a session leader acquires the tty it opens), then execs the
    command under the same pid. Without either, ``argv`` is spawned as it is."""
    steps = []
    if cgroup_procs:
        steps.append('echo $$ >"$1" || { echo "echsd: cannot enter cgroup $1" >&2; exit 126; }')
    if tty_path:
        steps.append('exec 3<>"$2" && exec 3>&-')
    if not steps:
        return argv
    script = "; ".join(steps) + '; shift 2; exec "$@"'
    return ["/bin/sh", "-c", script, "echsd-launch", cgroup_procs or "", tty_path or "", *argv]


class Containment:
    """The ``process-group`` mechanism, and the interface of the others."""

    name = PROCESS_GROUP
    detail = "process groups only: a command that calls setsid or setpgid escapes"

    def prepare(self, argv: list[str], tty_path: str | None = None) -> Prepared:
        return Prepared(launcher(argv, cgroup_procs=None, tty_path=tty_path), self.name)

    def close(self) -> None:
        """The daemon is done with this containment."""

    def holds(self, cgroup_id: str) -> bool:
        """Whether a process in cgroup ``cgroup_id`` was in one of our enclosures."""
        return False

    def sweep(self, live: Collection[Path], leaders: Collection[int] = ()) -> list[int]:
        """Kill what left the cgroups of its command (``live``: the cgroups of the commands
        still running, ``leaders`` their first processes); the pids killed."""
        return []


_command_numbers = itertools.count(1)


class CgroupContainment(Containment):
    name = CGROUP

    def __init__(self, parent: Path, parent_id: str) -> None:
        self.parent = parent
        self.parent_id = parent_id
        self.tree = parent  # what the sweep searches: this directory, or the whole tree we own
        self.leaf: Path | None = None  # the daemon's own cgroup, once it moved into one
        self.detail = f"a cgroup v2 per command under {parent}"

    def own(self, tree: Path, leaf: Path) -> None:
        """The daemon moved into ``leaf`` and owns ``tree``: the sweep searches all of it."""
        self.tree, self.leaf = tree, leaf
        self.detail += f"; the daemon owns {tree} (it lives in {leaf.name}/) and kills whatever else appears in it"

    def sweep(self, live: Collection[Path], leaders: Collection[int] = ()) -> list[int]:
        return strays.sweep(self.tree, self.leaf, live, leaders)

    def prepare(self, argv: list[str], tty_path: str | None = None) -> Prepared:
        self.parent.mkdir(exist_ok=True)
        while True:  # names are unique per process, whatever instance made the parent
            name = f"cmd-{next(_command_numbers)}"
            path = self.parent / name
            try:
                path.mkdir()
                break
            except FileExistsError:
                continue
        wrapped = launcher(argv, cgroup_procs=str(path / "cgroup.procs"), tty_path=tty_path)
        return Prepared(wrapped, self.name, path, f"{self.parent_id.rstrip('/')}/{name}")

    def close(self) -> None:
        if self.leaf is None and not any(self.parent.glob("cmd-*")):  # other daemons of this process may use it
            remove_cgroup(self.parent)

    def holds(self, cgroup_id: str) -> bool:
        return cgroup_id.startswith(self.parent_id.rstrip("/") + "/")


class PidNamespaceContainment(Containment):
    name = PIDNS

    def __init__(self, unshare_argv: list[str]) -> None:
        self.unshare_argv = unshare_argv
        self.detail = "a PID namespace per command (" + " ".join(unshare_argv) + ")"

    def prepare(self, argv: list[str], tty_path: str | None = None) -> Prepared:
        return Prepared(launcher([*self.unshare_argv, "--", *argv], cgroup_procs=None, tty_path=tty_path), self.name)
