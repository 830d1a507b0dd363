"""The built-in tools by name: what a thread's ``tools`` config may list."""

from __future__ import annotations

from echsd.tools.base import Tool
from echsd.tools.exec_command import ExecCommand


def builtin_tools() -> dict[str, Tool]:
    tools: list[Tool] = [ExecCommand()]
    return {tool.spec.name: tool for tool in tools}


def default_tool_names(tools: dict[str, Tool]) -> tuple[str, ...]:
    return tuple(tools)
