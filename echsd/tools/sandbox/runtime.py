"""The daemon's sandbox: what is enforceable here, the fork server, and thread policies.

One ``SandboxRuntime`` per daemon (``process.py`` holds it beside the containment). At start
``start()`` probes the kernel (``support.py``). For each confined command, ``admit`` checks
the thread's policy against what is enforceable: all of it is, or the command is refused
with the reasons, or, with ``sandbox_fallback = "unconfined"``, it runs with what can be
enforced and a note saying what was not. ``policy`` builds a thread's policy value from its
config and the daemon's own paths (hidden from commands) and temp root (each thread gets
``<tmp root>/<thread id>`` as ``TMPDIR``).
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from dataclasses import replace
from typing import Any, Sequence

import trio

from echsd.tools.sandbox.launcher import ForkServer, SandboxedProcess
from echsd.tools.sandbox.policy import FULL_ACCESS, SandboxPolicy
from echsd.tools.sandbox.support import SandboxSupport, probe

PROBE_TIMEOUT_S = 10.0


class SandboxUnavailable(Exception):
    """A policy this daemon cannot enforce, with the fallback refusing to run without it."""


class SandboxRuntime:
    def __init__(
        self,
        *,
        disabled: Sequence[str] = (),
        fallback: str = "refuse",
        hidden: Sequence[str] = (),
        tmp_root: str | None = None,
    ) -> None:
        self.disabled = tuple(disabled)
        self.fallback = fallback
        self.hidden = tuple(hidden)
        self.tmp_root = tmp_root or default_tmp_root()
        self.forkserver = ForkServer()
        self.support: SandboxSupport | None = None
        self._probing = trio.Lock()

    async def start(self) -> SandboxSupport:
        """Probe once (later calls return what was found)."""
        async with self._probing:
            if self.support is None:
                self.support = await probe(self._run_probe, self.disabled)
            return self.support

    def status(self) -> dict[str, Any]:
        if self.support is None:
            return {"mechanism": "unknown", "fallback": self.fallback, "problems": ["not probed yet"]}
        return self.support.to_status(self.fallback)

    def policy(self, thread_id: str, *, mode: str, network: bool, cwd: str, writable_roots: Sequence[str] = ()) -> SandboxPolicy:
        return SandboxPolicy(
            mode=mode, network=network, cwd=cwd, writable_roots=tuple(writable_roots), tmpdir=os.path.join(self.tmp_root, thread_id), hidden=self.hidden
        )

    def refusals(self, mode: str, network: bool) -> list[str]:
        """Why a thread with this policy would be refused here (empty: it would run, also
        when the fallback runs it unconfined)."""
        if self.support is None or self.fallback == "unconfined":
            return []
        return self.support.missing(SandboxPolicy(mode, network, cwd="/"))

    async def admit(self, policy: SandboxPolicy) -> tuple[SandboxPolicy, list[str]]:
        """The policy to run a command with, and notes for its output; SandboxUnavailable
        when it cannot be enforced and the fallback refuses."""
        support = await self.start()
        reasons = support.missing(policy)
        if not reasons:
            return policy, []
        if self.fallback != "unconfined":
            raise SandboxUnavailable(
                "; ".join(reasons) + '. The command did not run. (sandbox_fallback = "unconfined" in config.toml runs such commands without it.)'
            )
        weaker = policy
        if policy.confines_files and not support.landlock_abi:
            weaker = replace(weaker, mode=FULL_ACCESS)
        if not policy.network and support.network_mechanism is None:
            weaker = replace(weaker, network=True)
        return weaker, [f"ran without the sandbox it asked for (sandbox_fallback = unconfined): {'; '.join(reasons)}"]

    async def spawn(self, request: dict[str, Any], stdio: Sequence[int]) -> SandboxedProcess:
        support = await self.start()
        request = {**request, "mechanism": support.mechanism.to_json()}
        if request.get("policy", {}).get("tmpdir"):
            os.makedirs(request["policy"]["tmpdir"], mode=0o700, exist_ok=True)
        return await self.forkserver.spawn(request, stdio)

    async def _run_probe(self, request: dict[str, Any]) -> int:
        null = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
        try:
            process = await self.forkserver.spawn(request, [null, null, null])
        finally:
            os.close(null)
        with trio.move_on_after(PROBE_TIMEOUT_S):
            return await process.wait()
        try:
            os.killpg(process.pid, signal.SIGKILL)  # a session of its own, in no enclosure
        except OSError:
            pass
        raise OSError(f"the test command did not finish within {PROBE_TIMEOUT_S:g} s")

    def remove_tmpdirs(self, thread_ids: Sequence[str]) -> None:
        """Deleted threads' temp dirs go with them (blocking: run it off the event loop)."""
        for thread_id in thread_ids:
            shutil.rmtree(os.path.join(self.tmp_root, thread_id), ignore_errors=True)

    async def aclose(self) -> None:
        await self.forkserver.aclose()


def default_tmp_root() -> str:
    """``$TMPDIR/echsd-UID``: made 0700 and ours, or refused (another user's, a symlink)."""
    root = os.path.join(tempfile.gettempdir(), f"echsd-{os.geteuid()}")
    try:
        os.mkdir(root, 0o700)
    except FileExistsError:
        pass
    info = os.lstat(root)
    if not os.path.isdir(root) or os.path.islink(root) or info.st_uid != os.geteuid():
        raise OSError(f"{root} is not a directory of ours; cannot keep thread temp dirs there")
    return root
