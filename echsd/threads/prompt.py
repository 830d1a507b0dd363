"""The instructions of one model request: the thread's own, or its model's base prompt from the
catalog, with what its situation adds (a sub-agent's role, an autonomous run's turn count)."""

from __future__ import annotations

from typing import Any

from echsd.codex import ModelCatalog
from echsd.threads.autorun import instructions_note
from echsd.threads.config import ThreadConfig
from echsd.threads.oversize import tokens_of
from echsd.tools.registry import ToolRegistry

SUBAGENT_NOTE = """

# You are a sub-agent

Another agent (your parent) gave you this task and waits for your final reply: it is all your \
parent reads, so make it a complete, self-contained report of what you did or found, with the \
paths and facts it needs. Do only the task you were given; if it cannot be done as asked, say \
why rather than doing something else. Findings other agents need while you work go on the \
blackboard."""


def request_instructions(config: ThreadConfig, base_prompt: str, *, subagent: bool, run: dict[str, Any] | None) -> str:
    text = config.rendered_instructions(base_prompt)
    if subagent:
        text += SUBAGENT_NOTE
    if run:
        text += instructions_note(run)
    return text


def prompt_and_tools(config: ThreadConfig, catalog: ModelCatalog, registry: ToolRegistry, *, subagent: bool) -> tuple[str, list[dict[str, Any]]]:
    """The instructions (without a run's note) and tool specs a request of this thread carries."""
    custom_tools = catalog.get(config.model).custom_tools
    tools = [tool.spec.to_model(custom_tools=custom_tools) for tool in registry.offered(config.tools, config.mcp)]
    return request_instructions(config, catalog.prompt(config.model), subagent=subagent, run=None), tools


def input_budget(config: ThreadConfig, catalog: ModelCatalog, registry: ToolRegistry, *, subagent: bool, share: float) -> tuple[int, int]:
    """(the model's window, what of ``share`` of it is left for the history once the prompt and
    the tools are counted): the room ``oversize`` measures inputs and histories against."""
    instructions, tools = prompt_and_tools(config, catalog, registry, subagent=subagent)
    window = catalog.get(config.model).context_window
    return window, int(window * share) - tokens_of(instructions) - tokens_of(tools)
