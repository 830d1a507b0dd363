"""Apply a sandbox policy to the current process, just before it execs the command.

Runs in a single-threaded child (the fork server's), never in the daemon. The order
matters: namespaces first (they need the capabilities a fresh user namespace gives, which
no_new_privs does not take away), then the mounts of the layout (hidden daemon paths, pinned
git dirs, read-only hooks and config), then no_new_privs, the seccomp socket filter where
network is refused without a network namespace, and last Landlock, which also forbids any
later mount change. Everything inherits to every process the command starts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from echsd.tools.sandbox import landlock, libc, namespaces, seccomp
from echsd.tools.sandbox.layout import DEVICES_RO, DEVICES_RW, Layout, layout
from echsd.tools.sandbox.policy import SandboxPolicy

DEVICE_RW = landlock.READ_FILE | landlock.WRITE_FILE | landlock.TRUNCATE | landlock.IOCTL_DEV
DEVICE_RO = landlock.READ_FILE | landlock.IOCTL_DEV
SCOPES = landlock.SCOPE_ABSTRACT_UNIX_SOCKET | landlock.SCOPE_SIGNAL


@dataclass(frozen=True)
class Mechanism:
    """What the kernel offers here (see ``probe.py``): the Landlock ABI (0: none), and
    whether user namespaces (with mount and network ones) may be made."""

    landlock_abi: int
    namespaces: bool

    def to_json(self) -> dict[str, object]:
        return {"landlock_abi": self.landlock_abi, "namespaces": self.namespaces}


def confine(policy: SandboxPolicy, mechanism: Mechanism, *, tty_path: str | None = None) -> Layout:
    """Confine this process (and all it will start) by ``policy``. Raises OSError with the
    step that failed; the caller must not exec the command then."""
    plan = isolate(policy, mechanism)
    restrict(policy, mechanism, plan, tty_path=tty_path)
    return plan


def isolate(policy: SandboxPolicy, mechanism: Mechanism) -> Layout:
    """The namespaces and mounts (where user namespaces are allowed); the layout they follow."""
    plan = layout(policy)
    if mechanism.namespaces:
        namespaces.enter(network=policy.network)
        _mount_layout(plan)
    return plan


def restrict(policy: SandboxPolicy, mechanism: Mechanism, plan: Layout, *, tty_path: str | None = None) -> None:
    """no_new_privs, the socket filter where needed, and Landlock: the last step before exec."""
    libc.set_no_new_privs()
    tcp_rules = not policy.network and not mechanism.namespaces
    if tcp_rules:
        seccomp.install_socket_filter()
    if policy.confines_files or (tcp_rules and mechanism.landlock_abi >= 4):
        _landlock(policy, plan, mechanism.landlock_abi, tty_path, tcp_rules)


def _mount_layout(plan: Layout) -> None:
    for path in plan.hidden:
        namespaces.hide(path)
    for path in plan.pinned:
        namespaces.pin(path)
    for path in plan.readonly:
        if not os.path.lexists(path):  # a repository without hooks: make the (empty) directory to protect
            os.makedirs(path, exist_ok=True)
        namespaces.bind_readonly(path)


def _landlock(policy: SandboxPolicy, plan: Layout, abi: int, tty_path: str | None, tcp_rules: bool) -> None:
    files = policy.confines_files
    ruleset = landlock.Ruleset(
        abi,
        fs=landlock.fs_rights(abi) if files else 0,
        net=landlock.BIND_TCP | landlock.CONNECT_TCP if tcp_rules else 0,
        scoped=SCOPES if files else 0,
    )
    try:
        if files:
            ruleset.allow_path("/", landlock.READ)
            for path in plan.writable:
                ruleset.allow_path(path, landlock.fs_rights(abi))
            for path in (*DEVICES_RW, *([tty_path] if tty_path else [])):
                ruleset.allow_path(path, DEVICE_RW)
            for path in DEVICES_RO:
                ruleset.allow_path(path, DEVICE_RO)
    except BaseException:
        ruleset.close()
        raise
    ruleset.restrict_self()
