"""Find the strongest containment that works here, by trying each for real, once per daemon.

The mechanisms and what works where are described in ``containment.py``. Each probe starts a
command in an enclosure, checks from the inside that it is enclosed (its cgroup, or pid 1 of
a new namespace), kills the enclosure and checks that the command died; a probe that fails
in any way (or hangs: every read has a deadline) only rules its mechanism out. A few ms.
"""

from __future__ import annotations

import functools
import os
import select
import shutil
import subprocess
import time
from pathlib import Path

from echsd.logs import get_logger
from echsd.tools import procfs, strays
from echsd.tools.containment import (
    PIDNS,
    CgroupContainment,
    Containment,
    PidNamespaceContainment,
    destroy_cgroup,
    kill_cgroup,
    remove_cgroup,
)

log = get_logger(__name__)

PROBE_TIMEOUT_S = 5.0


def detect_containment(*, claim: bool = False) -> Containment:
    """The best mechanism that works here, tried for real (a few ms). ``claim``: the daemon
    is this process's program (``echsd serve``) and may take a cgroup it has to itself
    (``strays.py``); an embedding program (the tests) keeps its cgroup."""
    for probe in (functools.partial(probe_cgroup, claim=claim), probe_pid_namespace):
        try:
            found = probe()
        except Exception as exc:  # a probe must never stop the daemon from starting
            log.info("containment probe failed", probe=getattr(probe, "__name__", "probe_cgroup"), error=f"{type(exc).__name__}: {exc}")
            continue
        if found is not None:
            log.info("tool containment", mechanism=found.name, detail=found.detail)
            return found
    log.warning("tool containment: process groups only; a command that calls setsid can escape")
    return Containment()


def own_cgroup() -> tuple[Path, str] | None:
    """The daemon's own cgroup v2 directory and its /proc path, from /proc/self/cgroup and
    the cgroup2 mount (whose root may be a subtree, as in a cgroup namespace)."""
    own = procfs.cgroup_of("self")
    if own is None:
        return None
    try:
        mountinfo = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    for line in mountinfo:
        before, _, after = line.partition(" - ")
        fields = before.split()
        if not after.startswith("cgroup2 ") or len(fields) < 5:
            continue
        root, mount_point = fields[3].rstrip("/"), Path(fields[4])
        if own == root or own.startswith(root + "/"):
            return mount_point / own[len(root) :].lstrip("/"), own
    return None


def probe_cgroup(*, claim: bool = False) -> CgroupContainment | None:
    found = own_cgroup()
    if found is None or not os.access(found[0], os.W_OK):
        log.info("no writable cgroup v2 directory", cgroup=str(found[0]) if found else None)
        return None
    base, base_id = found
    dead_owner = strays.had_owner(base, _of_dead_daemon)
    sweep_dead_daemon_cgroups(base)
    me = os.getpid()
    name = f"echsd-{me}-{procfs.start_time(me)}"
    (base / name).mkdir(exist_ok=True)
    containment = CgroupContainment(base / name, f"{base_id.rstrip('/')}/{name}")
    try:
        _try_enclosure(containment)
    except BaseException:
        containment.close()
        raise
    leaf = strays.claim_tree(base, base / name, dead_owner) if claim else None
    if leaf is not None:
        containment.own(base, leaf)
        containment.sweep(())  # a dead owner's leftovers
    return containment


def probe_pid_namespace() -> PidNamespaceContainment | None:
    unshare = shutil.which("unshare")
    if unshare is None:
        return None
    variants = [[unshare, "--pid", "--fork", "--kill-child"]] if os.geteuid() == 0 else []
    variants.append([unshare, "--user", "--map-current-user", "--pid", "--fork", "--kill-child"])
    for variant in variants:
        containment = PidNamespaceContainment(variant)
        try:
            _try_enclosure(containment)
        except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
            log.info("pid namespace variant failed", argv=" ".join(variant), error=str(exc))
            continue
        return containment
    return None


def _try_enclosure(containment: Containment) -> None:
    """Start a command in an enclosure, check that it is inside, kill the enclosure, check
    that the command died. RuntimeError when a step does not behave."""
    # builtins only until the sleep: a child killed with the probe would be left a zombie
    report_script = 'echo pid=$$; while read -r line; do echo "$line"; done </proc/self/cgroup; exec sleep 30'
    prepared = containment.prepare(["/bin/sh", "-c", report_script])
    process = subprocess.Popen(
        prepared.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True
    )
    enclosure = prepared.enclose(process.pid)
    try:
        assert process.stdout is not None
        report = _read_until(process.stdout.fileno(), b"\n0::", PROBE_TIMEOUT_S).decode(errors="replace")
        if prepared.cgroup_id is not None and f"0::{prepared.cgroup_id}\n" not in report + "\n":
            raise RuntimeError(f"the command did not enter its cgroup: {report!r}")
        if containment.name == PIDNS and not report.startswith("pid=1\n"):
            raise RuntimeError(f"the command is not the init of a new PID namespace: {report!r}")
        enclosure.kill()
        try:  # unshare reports a SIGKILLed init as status 1, so only the exit itself counts
            process.wait(PROBE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise RuntimeError("killing the enclosure did not stop the command") from None
    finally:
        if process.poll() is None:
            procfs.kill_quietly(process.pid, group=True)
            process.wait()
        if process.stdout is not None:
            process.stdout.close()
        prepared.abandon()


def _read_until(fd: int, marker: bytes, timeout_s: float) -> bytes:
    """Read from a pipe until ``marker`` and the end of its line arrive (or EOF, or the
    timeout: a probe must never hang the daemon's start)."""
    data = b""
    deadline = time.monotonic() + timeout_s
    while True:
        at = data.find(marker)
        if at >= 0 and b"\n" in data[at + 1 :]:
            return data
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
            raise RuntimeError(f"no answer from the probe command within {timeout_s:g} s: {data!r}")
        chunk = os.read(fd, 4096)
        if not chunk:
            return data
        data += chunk


def _of_dead_daemon(directory: Path) -> bool:
    """Whether ``directory`` (``echsd-PID-START``) is the per-daemon cgroup of a daemon that died."""
    _, pid_text, start_text = directory.name.split("-", 2)
    return pid_text.isdigit() and str(procfs.start_time(int(pid_text))) != start_text


def sweep_dead_daemon_cgroups(base: Path) -> int:
    """Kill and remove what is left in the per-daemon cgroups (``echsd-PID-START``) of
    daemons that are gone: a SIGKILLed daemon's commands die even if the registry never
    heard of them (e.g. killed between a spawn and its registration)."""
    swept = 0
    for parent in base.glob("echsd-*-*"):
        if not _of_dead_daemon(parent):
            continue  # not ours, or that daemon (maybe this very process) is alive
        try:
            commands = [child for child in parent.iterdir() if child.is_dir()]
        except OSError as exc:  # another user's daemon: not ours to sweep
            log.info("cannot sweep cgroup", cgroup=str(parent), error=str(exc))
            continue
        for command in commands:
            kill_cgroup(command)  # all first, then wait: they die in parallel
        for command in commands:
            destroy_cgroup(command)
        remove_cgroup(parent)
        swept += len(commands)
    if swept:
        log.warning("killed commands left in the cgroups of a daemon that died", commands=swept)
    return swept
