"""Kinds of sub-agents a thread can spawn (``spawn_agent {agent_type}``).

An agent type says what a child gets unless ``spawn_agent`` says otherwise: a model, a
reasoning effort, instructions, and a tool set. Anything a type leaves unset comes from the
parent. The shipped types can be changed, and new ones added, in ``config.toml``::

    [agent_types.explorer]
    reasoning = "medium"
    tools = ["read_file", "list_dir", "grep_files"]
    sandbox = "read-only"

    [agent_types.reviewer]
    description = "reads a change and lists its problems"
    model = "gpt-5.5"
    instructions = "Review the change you are given. ..."

    [agent_types.builder]
    description = "builds a feature on a branch of its own"
    isolation = "worktree"   # each child in a git worktree (see spawn_agent's isolation)
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping

from echsd.sandbox_modes import MODES, NETWORK

READ_ONLY = ("read_file", "list_dir", "grep_files", "view_image", "update_plan", "blackboard_read", "blackboard_write", "blackboard_wait")


@dataclass(frozen=True)
class AgentType:
    name: str
    description: str  # for the model, in spawn_agent's description
    model: str | None = None  # None: the parent's
    reasoning: str | None = None  # None: the parent's (or the model's default if it does not fit)
    instructions: str | None = None  # None: the model's base prompt (with its note for sub-agents)
    tools: tuple[str, ...] | None = None  # None: the parent's (a child never gets more than its parent)
    mcp_servers: tuple[str, ...] | None = None  # None: the parent's MCP servers (never more than those)
    sandbox: str | None = None  # None: the parent's (never looser than the parent's)
    network: str | None = None  # None: the parent's (never on where the parent's is off)
    isolation: str | None = None  # "worktree": each such child works in a git worktree of its own

    def policy(self) -> dict[str, str]:
        """The sandbox keys this type sets."""
        return {key: value for key, value in (("sandbox", self.sandbox), ("network", self.network)) if value is not None}


SHIPPED: dict[str, AgentType] = {
    t.name: t
    for t in (
        AgentType("default", "your own model, reasoning and tools"),
        AgentType("explorer", "looks around quickly and reports; changes nothing", reasoning="low", tools=READ_ONLY, sandbox="read-only"),
        AgentType("worker", "does a well-scoped piece of the work; may change files and run commands"),
        AgentType("research", "thinks hard about a question; reads, changes nothing", reasoning="high", tools=READ_ONLY, sandbox="read-only"),
        AgentType("simple", "small, quick tasks", reasoning="low"),
    )
}


FIELDS = ("description", "model", "reasoning", "instructions", "tools", "mcp_servers", "sandbox", "network", "isolation")  # of an [agent_types.NAME] table
ISOLATIONS = ("none", "worktree")
CHOICES = {"sandbox": MODES, "network": NETWORK, "isolation": ISOLATIONS}


class AgentTypeError(ValueError):
    """A bad ``[agent_types.NAME]`` table; the message (one line) names the setting."""


def load_agent_types(table: Any, where: str) -> dict[str, AgentType]:
    """The shipped types with ``config.toml``'s ``[agent_types.NAME]`` tables merged in."""
    types = dict(SHIPPED)
    if table is None:
        return types
    if not isinstance(table, Mapping):
        raise AgentTypeError(f"invalid setting 'agent_types' in {where}: expected a table of tables")
    for name, fields in table.items():
        if not isinstance(fields, Mapping):
            raise AgentTypeError(f"invalid setting 'agent_types.{name}' in {where}: expected a table")
        base = types.get(name, AgentType(name, f"the {name} agent"))
        values: dict[str, Any] = {}
        for key, value in fields.items():
            if key in ("description", "model", "reasoning", "instructions"):
                if not isinstance(value, str) or not value.strip():
                    raise AgentTypeError(f"invalid setting 'agent_types.{name}.{key}' in {where}: expected a non-empty string")
                values[key] = value
            elif key in CHOICES:
                if value not in CHOICES[key]:
                    raise AgentTypeError(
                        f"invalid setting 'agent_types.{name}.{key}' in {where}: expected one of {', '.join(CHOICES[key])} (got {value!r})"
                    )
                values[key] = value
            elif key in ("tools", "mcp_servers"):
                if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
                    what = "tool names" if key == "tools" else "MCP server names"
                    raise AgentTypeError(f"invalid setting 'agent_types.{name}.{key}' in {where}: expected a list of {what}")
                values[key] = tuple(value)
            else:
                raise AgentTypeError(f"unknown setting 'agent_types.{name}.{key}' in {where}; known: {', '.join(FIELDS)}")
        types[name] = replace(base, **values)
    return types
