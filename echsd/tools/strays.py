"""Commands that left their cgroup: the daemon's own leaf, and the sweep that kills them.

Under systemd's ``Delegate=yes`` the daemon's cgroup and everything below it belong to the
daemon's user, and so do the tool commands: a command can write its pid into any
``cgroup.procs`` of that tree (the daemon's own one included), leave its command cgroup,
``setsid`` and survive the kill of its cgroup. File modes cannot stop a process of the same
user (it owns the files and may chmod them back), so escapes are found and killed instead:

- **claiming the tree.** When the daemon's cgroup holds nothing but the daemon at start (a
  service's cgroup; not a login session's, which holds the user's shell), the daemon moves
  into a leaf of its own, ``<per-daemon dir>/daemon``, and owns the whole tree: from then
  on no process belongs anywhere in it but the daemon, the helpers it starts itself
  (``daemon_helper``) and the commands in their live cgroups. A tree whose former owner
  died (its leaf is still there) is claimed again: what it holds is that daemon's leftovers.
  Otherwise only the daemon's own directory (``echsd-PID-START``) is swept.
- **the sweep** (after every command's release, and at shutdown): every process of the swept
  tree that is not the daemon, a helper or inside a live command's cgroup is SIGKILLed,
  round after round until a round finds no new one (a process forking meanwhile is caught
  by the next). A process that moved into another command's live cgroup dies with that
  command. While a process is being started (``starting``: a command before it entered
  its cgroup, a helper before it is known) the sweep waits, then runs.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Collection, Iterator

from echsd.logs import get_logger
from echsd.tools import procfs

log = get_logger(__name__)

LEAF = "daemon"
MAX_ROUNDS = 50
_helpers: dict[int, int | None] = {}  # pid -> start time: processes the daemon itself started
_starting = 0  # processes being started now (not yet in their cgroup, or not yet known)
_deferred: Callable[[], object] | None = None  # a sweep asked for meanwhile


@contextmanager
def starting() -> Iterator[None]:
    """Around starting a process in the daemon's cgroup, until it is in its own cgroup or
    known as a helper: no sweep runs meanwhile (it would take the newcomer for a stray)."""
    global _starting, _deferred
    _starting += 1
    try:
        yield
    finally:
        _starting -= 1
        if not _starting and _deferred is not None:
            run, _deferred = _deferred, None
            run()


def when_idle(run: Callable[[], object]) -> None:
    """Run ``run`` now, or as soon as no process is being started."""
    global _deferred
    if _starting:
        _deferred = run
    else:
        run()


def daemon_helper(pid: int) -> None:
    """``pid`` is a process the daemon started for itself (not a tool command): the sweep
    leaves it alone wherever it is in the daemon's leaf."""
    _helpers[pid] = procfs.start_time(pid)


def _is_helper(pid: int) -> bool:
    if pid not in _helpers:
        return False
    if procfs.start_time(pid) == _helpers[pid]:
        return True
    del _helpers[pid]  # gone (its pid may be another process's now)
    return False


def processes_in(cgroup: Path) -> list[int]:
    try:
        return [int(pid) for pid in (cgroup / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def claim_tree(base: Path, own_dir: Path, dead_owner: bool) -> Path | None:
    """Move the daemon into ``own_dir/daemon`` if ``base`` (its cgroup) holds nothing else
    (or held a daemon that died, ``dead_owner``); the leaf, or None when ``base`` is shared."""
    me = os.getpid()
    others = [pid for pid in processes_in(base) if pid != me]
    if others and not dead_owner:
        return None
    leaf = own_dir / LEAF
    try:
        leaf.mkdir(exist_ok=True)
        (leaf / "cgroup.procs").write_text(str(me))
    except OSError as exc:
        log.info("cannot move the daemon into a cgroup of its own", cgroup=str(leaf), error=str(exc))
        return None
    return leaf


def had_owner(base: Path, is_dead: Callable[[Path], bool]) -> bool:
    """Whether a daemon that died had claimed ``base``: one of the dead daemons'
    directories still holds its leaf."""
    return any((directory / LEAF).is_dir() for directory in base.glob("echsd-*-*") if is_dead(directory))


def sweep(tree: Path, leaf: Path | None, live: Collection[Path], leaders: Collection[int] = ()) -> list[int]:
    """SIGKILL every process under ``tree`` that is not the daemon, one of its helpers or a
    command's leader still on its way into its cgroup (in ``leaf``), or inside a ``live``
    command cgroup; the pids killed."""
    me = os.getpid()
    spared = {Path(path) for path in live}
    killed: set[int] = set()
    for _ in range(MAX_ROUNDS):
        found = []
        for directory, _subdirs, _files in os.walk(tree):
            cgroup = Path(directory)
            if cgroup in spared or any(parent in spared for parent in cgroup.parents):
                continue
            for pid in processes_in(cgroup):
                if pid == me or pid in killed or (cgroup == leaf and (pid in leaders or _is_helper(pid))):
                    continue
                found.append(pid)
        if not found:
            break
        for pid in found:
            procfs.kill_quietly(pid)
        killed.update(found)
    if killed:
        log.warning("killed processes that left their command's cgroup", processes=len(killed), tree=str(tree))
    return sorted(killed)
