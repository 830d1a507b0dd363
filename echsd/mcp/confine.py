"""The sandbox a stdio MCP server runs in: the one new threads get by default.

A stdio server is a program the daemon runs so the model can use it, so it is confined like
the model's own commands: by the daemon's defaults for new threads (``sandbox``, ``network``
and ``writable_roots`` of config.toml), unless the server's table says otherwise with its own
``sandbox`` and ``network``. Its workspace is its ``cwd`` (the daemon's directory when it
has none), its ``TMPDIR`` a private ``<tmp root>/mcp-<name>``, and the daemon's own paths
(state directory, sockets) are hidden from it as from every confined command. A policy the
kernel here cannot enforce fails the server's start, saying why, unless
``sandbox_fallback = "unconfined"`` (then it runs with what can be enforced, and the log
says what was not).
"""

from __future__ import annotations

from dataclasses import dataclass

from echsd.logs import get_logger
from echsd.mcp.config import McpServerConfig
from echsd.sandbox_modes import FULL_ACCESS
from echsd.tools.sandbox.policy import SandboxPolicy
from echsd.tools.sandbox.runtime import SandboxRuntime, SandboxUnavailable

log = get_logger(__name__)
TMPDIR_PREFIX = "mcp-"  # thread ids start with thr_: no server's temp dir is a thread's


class SandboxRefused(Exception):
    """The server's sandbox cannot be enforced here, and the fallback refuses to run without it."""


@dataclass(frozen=True)
class ServerSandbox:
    """The daemon's sandbox defaults, as a ``Confine`` for ``stdio_transport``."""

    runtime: SandboxRuntime
    mode: str
    network: str | None  # None: off, but on under full-access
    writable_roots: tuple[str, ...] = ()

    def policy(self, config: McpServerConfig, cwd: str) -> SandboxPolicy:
        mode = config.sandbox or self.mode
        network = config.network or self.network or ("on" if mode == FULL_ACCESS else "off")
        return self.runtime.policy(TMPDIR_PREFIX + config.name, mode=mode, network=network == "on", cwd=cwd, writable_roots=self.writable_roots)

    async def __call__(self, config: McpServerConfig, cwd: str) -> SandboxPolicy:
        wanted = self.policy(config, cwd)
        if not wanted.confined:
            return wanted
        try:
            admitted, notes = await self.runtime.admit(wanted)
        except SandboxUnavailable as exc:
            raise SandboxRefused(f"its sandbox ({describe(wanted)}) cannot be enforced here: {exc}") from None
        for note in notes:
            log.warning("mcp server sandbox weakened", server=config.name, note=note)
        return admitted


def describe(policy: SandboxPolicy | None) -> str:
    """A server's sandbox in a few words, for ``echs mcp ls``."""
    if policy is None:
        return "none"
    return f"{policy.mode}, network {'on' if policy.network else 'off'}"


UNCONFINED = f"{FULL_ACCESS}, network on"  # (as ``describe`` says it)
