"""What the kernel here can enforce, found by trying it for real once per daemon.

``probe`` asks the kernel for its Landlock ABI, then starts test commands through the fork
server: one in fresh user, mount and network namespaces, and one under workspace-write that
writes inside and outside its cwd (the write outside must be refused and leave nothing).
Whatever fails only rules its mechanism out, with the reason kept for ``echs status`` and
the start-up log. ``disabled`` (the ``sandbox_disable`` setting: ``landlock``, ``userns``,
``seccomp``) rules mechanisms out without trying, to see how the daemon behaves without
them.

``SandboxSupport.missing(policy)`` says what of a policy cannot be enforced here (nothing,
or the reasons), and ``limits`` what weaker protection applies: the daemon never claims a
boundary that is not there.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

from echsd.logs import get_logger
from echsd.tools.sandbox import landlock, libc
from echsd.tools.sandbox.confine import Mechanism
from echsd.tools.sandbox.policy import FULL_ACCESS, WORKSPACE_WRITE, SandboxPolicy

log = get_logger(__name__)

DISABLE_CHOICES = ("landlock", "userns", "seccomp")
FALLBACKS = ("refuse", "unconfined")

RunProbe = Callable[[dict[str, Any]], Awaitable[int]]  # starts a request's command, returns its exit code


@dataclass(frozen=True)
class SandboxSupport:
    landlock_abi: int  # 0: no Landlock (absent, disabled, or it did not confine the test)
    namespaces: bool  # user + mount + network namespaces
    seccomp: bool  # the socket filter can be installed (a known architecture)
    problems: tuple[str, ...] = ()  # why a mechanism is not used
    disabled: tuple[str, ...] = ()

    @property
    def mechanism(self) -> Mechanism:
        return Mechanism(self.landlock_abi, self.namespaces)

    @property
    def name(self) -> str:
        parts = (["landlock"] if self.landlock_abi else []) + (["userns"] if self.namespaces else []) + (["seccomp"] if self.seccomp and not self.namespaces else [])
        return "+".join(parts) or "none"

    @property
    def network_mechanism(self) -> str | None:
        if self.namespaces:
            return "network namespace"
        if self.seccomp:
            return "seccomp socket filter" + (" + landlock tcp rules" if self.landlock_abi >= 4 else "")
        return None

    def missing(self, policy: SandboxPolicy) -> list[str]:
        """Why ``policy`` cannot be enforced here (empty: it can)."""
        reasons = []
        if policy.confines_files and not self.landlock_abi:
            reasons.append(f"{policy.mode} needs Landlock, which is not available here ({self._why('landlock')})")
        if not policy.network and self.network_mechanism is None:
            reasons.append(f"network=off needs user namespaces or a seccomp filter, neither available here ({self._why('userns')})")
        return reasons

    def limits(self) -> list[str]:
        """What confined commands can still do here that a full sandbox would stop."""
        if not self.landlock_abi or self.namespaces:
            return []
        return [
            "git hooks and config of the cwd's repository stay writable (protecting them needs user namespaces)",
            "the daemon's state directory and sockets stay visible to commands (hiding them needs user namespaces)",
        ]

    def _why(self, mechanism: str) -> str:
        if mechanism in self.disabled:
            return "disabled by sandbox_disable"
        found = [problem for problem in self.problems if problem.startswith(mechanism)]
        return found[0] if found else "not offered by this kernel"

    def to_status(self, fallback: str) -> dict[str, Any]:
        return {
            "mechanism": self.name,
            "landlock_abi": self.landlock_abi,
            "filesystem": f"landlock (ABI {self.landlock_abi})" if self.landlock_abi else None,
            "network": self.network_mechanism,
            "namespaces": self.namespaces,
            "enforces": [mode for mode in (WORKSPACE_WRITE, "read-only") if self.landlock_abi] + (["network=off"] if self.network_mechanism else []),
            "limits": self.limits(),
            "problems": list(self.problems),
            "disabled": list(self.disabled),
            "fallback": fallback,
        }


@dataclass
class _Found:
    abi: int = 0
    namespaces: bool = False
    problems: list[str] = field(default_factory=list)


async def probe(run: RunProbe, disabled: tuple[str, ...] = ()) -> SandboxSupport:
    found = _Found()
    seccomp = "seccomp" not in disabled and libc.arch_numbers() is not None
    if "landlock" not in disabled:
        try:
            found.abi = landlock.abi_version()
        except OSError as exc:
            found.problems.append(f"landlock: {exc}")
        if not found.abi and not found.problems:
            found.problems.append("landlock: this kernel has no Landlock (not built in, or not in lsm=)")
    with tempfile.TemporaryDirectory(prefix="echsd-sandbox-probe-") as scratch:
        if "userns" not in disabled:
            found.namespaces = await _try(run, found, "userns", _request(scratch, FULL_ACCESS, Mechanism(0, True), "exit 0"))
        if found.abi:
            inside, outside = os.path.join(scratch, "inside"), os.path.join(scratch, "outside")
            os.mkdir(inside)
            os.mkdir(outside)
            script = 'echo ok > "$0/written"; echo escaped > "$1/written"; exit 0'
            request = _request(inside, WORKSPACE_WRITE, Mechanism(found.abi, found.namespaces), script, outside)
            if await _try(run, found, "landlock", request):
                if not os.path.exists(os.path.join(inside, "written")):
                    found.problems.append("landlock: a confined test command could not write in its own cwd")
                    found.abi = 0
                elif os.path.exists(os.path.join(outside, "written")):
                    found.problems.append("landlock: a confined test command wrote outside its writable roots")
                    found.abi = 0
            else:
                found.abi = 0
    support = SandboxSupport(found.abi, found.namespaces, seccomp, tuple(found.problems), tuple(disabled))
    if support.landlock_abi and support.network_mechanism:
        log.info("sandbox", mechanism=support.name, landlock_abi=support.landlock_abi, network=support.network_mechanism, limits=support.limits())
    else:
        log.warning("sandbox incomplete", mechanism=support.name, problems=support.problems, disabled=list(disabled))
    return support


def _request(cwd: str, mode: str, mechanism: Mechanism, script: str, *args: str) -> dict[str, Any]:
    policy = SandboxPolicy(mode, network=False, cwd=cwd)
    return {
        "argv": ["/bin/sh", "-c", script, cwd, *args],
        "env": {"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        "cwd": cwd,
        "policy": policy.to_json(),
        "mechanism": mechanism.to_json(),
    }


async def _try(run: RunProbe, found: _Found, mechanism: str, request: dict[str, Any]) -> bool:
    try:
        code = await run(request)
    except OSError as exc:
        found.problems.append(f"{mechanism}: {exc.strerror or exc}")
        return False
    if code != 0:
        found.problems.append(f"{mechanism}: the test command exited with status {code}")
        return False
    return True
