"""A thread's sandbox policy as one value: what its commands and file tools may touch.

``mode`` (Codex's names):
- ``read-only``: everything may be read, nothing written (but /dev/null and the like).
- ``workspace-write``: also writable: the thread's cwd, its private temp dir (``TMPDIR``)
  and the ``writable_roots``; the cwd's git repository stays usable (commits work) but its
  hooks and config do not (they would run code outside the sandbox the next time you use
  git yourself).
- ``full-access``: no filesystem confinement.

``network`` False: no network at all (a private network namespace with only loopback, or,
where that is refused, Landlock TCP rules plus a seccomp socket filter). ``hidden``: the
daemon's own paths (state directory, sockets) that a confined command must not even see,
or it could drive the daemon from inside. The policy is plain data: it travels to the
sandbox launcher as JSON, and the file tools check paths against the same value.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Mapping

from echsd.sandbox_modes import FULL_ACCESS, MODES, READ_ONLY, WORKSPACE_WRITE

__all__ = ["FULL_ACCESS", "MODES", "READ_ONLY", "WORKSPACE_WRITE", "SandboxPolicy"]


@dataclass(frozen=True)
class SandboxPolicy:
    mode: str
    network: bool
    cwd: str
    writable_roots: tuple[str, ...] = ()
    tmpdir: str | None = None
    hidden: tuple[str, ...] = ()

    @property
    def confines_files(self) -> bool:
        return self.mode != FULL_ACCESS

    @property
    def confined(self) -> bool:
        """Whether the kernel has anything to enforce (full access with network is nothing)."""
        return self.confines_files or not self.network

    def describe(self) -> str:
        """One line for the model and for people: the mode, what is writable, the network."""
        network = "network on" if self.network else "network off"
        if self.mode == FULL_ACCESS:
            return f"full-access, {network}"
        if self.mode == READ_ONLY:
            return f"read-only: nothing may be written; {network}"
        roots = ["the thread's cwd", "$TMPDIR", *self.writable_roots]
        return f"workspace-write: only {', '.join(roots)} may be written; {network}"

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["writable_roots"] = list(self.writable_roots)
        data["hidden"] = list(self.hidden)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "SandboxPolicy":
        return cls(
            mode=str(data["mode"]),
            network=bool(data["network"]),
            cwd=str(data["cwd"]),
            writable_roots=tuple(data.get("writable_roots") or ()),
            tmpdir=data.get("tmpdir"),
            hidden=tuple(data.get("hidden") or ()),
        )

