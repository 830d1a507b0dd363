"""A sandbox runtime and exec tool over real processes, for the sandbox tests."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from echsd.tools.exec_command import ExecCommand
from echsd.tools.process import ToolProcesses
from echsd.tools.sandbox.policy import SandboxPolicy
from echsd.tools.sandbox.runtime import SandboxRuntime
from echsd.tools.sessions import ExecSessionManager
from tests.tools.exec_helpers import available_mechanisms, context

OUTPUT = re.compile(r"\nOutput:\n(?P<output>.*)\Z", re.S)
EXIT = re.compile(r"Process exited with code (-?\d+)")


@dataclass
class Ran:
    code: int | None
    output: str
    report: str


@dataclass
class Confined:
    """Run commands as a thread with ``policy`` would, through ``exec_command``."""

    runtime: SandboxRuntime
    tool: ExecCommand

    def policy(self, cwd: Path, mode: str = "workspace-write", *, network: bool = False, roots: tuple[str, ...] = ()) -> SandboxPolicy:
        return self.runtime.policy("thr_5a0dbe0000000001", mode=mode, network=network, cwd=str(cwd), writable_roots=roots)

    async def run(self, policy: SandboxPolicy, cmd: str, **args: Any) -> Ran:
        ctx = context(Path(policy.cwd))
        from dataclasses import replace

        result = await self.tool.run({"cmd": cmd, "yield_time_ms": 20000, **args}, replace(ctx, sandbox=policy))
        assert isinstance(result.output, str)
        found = EXIT.search(result.output)
        body = OUTPUT.search(result.output)
        return Ran(int(found.group(1)) if found else None, body["output"] if body else "", result.output)


def confined_tool(runtime: SandboxRuntime, mechanism: str = "cgroup") -> ExecCommand:
    containment = available_mechanisms()[mechanism]
    assert containment is not None, f"{mechanism} containment is not available here"
    return ExecCommand(ExecSessionManager("thr_5a0dbe0000000001", processes=ToolProcesses(containment, sandbox=runtime)))
