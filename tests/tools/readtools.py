"""Calling the read-only file tools as the tool loop does: raw JSON arguments, schema check, run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from echsd.tools.args import check_arguments, parse_arguments
from echsd.tools.base import Tool, ToolContext, ToolResult


def context(cwd: Path, timeout_s: float = 30.0) -> ToolContext:
    async def sink(stream: str, chunk: str) -> None:
        pass

    return ToolContext("thr_0000000000000000", "turn_x", "call_x", cwd, sink, timeout_s)


async def call(tool: Tool, arguments: dict[str, Any] | str, cwd: Path) -> ToolResult:
    """Run ``tool`` on arguments as a model sends them (a JSON string); ToolError propagates."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    args = check_arguments(parse_arguments(raw), tool.spec.parameters)
    return await tool.run(args, context(cwd))


async def text(tool: Tool, arguments: dict[str, Any] | str, cwd: Path) -> str:
    result = await call(tool, arguments, cwd)
    assert isinstance(result.output, str)
    return result.output


_CALL_SCRIPT = """
import json, sys, trio
from pathlib import Path
from echsd.tools.base import ToolError
from echsd.tools.registry import builtin_tools
from tests.tools.readtools import call

async def main():
    tool = builtin_tools()[sys.argv[1]]
    try:
        result = await call(tool, json.loads(sys.argv[2]), Path(sys.argv[3]))
        print(json.dumps(result.output))
    except ToolError as exc:
        print(json.dumps("error: " + str(exc)))

trio.run(main)
"""


def call_without_file_privileges(name: str, arguments: dict[str, Any], cwd: Path) -> Any:
    """Run a tool in a child process that file permissions bind, even when we are root.

    Root bypasses permission bits through CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH; the child
    drops both (``setpriv``), so a mode-000 file is as unreadable to it as to anyone.
    """
    argv = [sys.executable, "-c", _CALL_SCRIPT, name, json.dumps(arguments), str(cwd)]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv", path="/usr/bin:/bin:/usr/sbin:/sbin")
        if setpriv is None:
            pytest.skip("running as root without setpriv to drop the file-permission override")
        argv = [setpriv, "--bounding-set", "-dac_override,-dac_read_search", *argv]
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=root, check=True)
    return json.loads(done.stdout)
