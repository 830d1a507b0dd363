"""The instructions of one model request: the thread's own, or its model's base prompt from the
catalog, with what its situation adds (a sub-agent's role, an autonomous run's turn count)."""

from __future__ import annotations

from typing import Any

from echsd.threads.autorun import instructions_note
from echsd.threads.config import ThreadConfig

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
