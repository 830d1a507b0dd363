"""The sub-agent tools: ``spawn_agent``, ``send_to_agent``, ``wait_agents``, ``kill_agent``,
``list_agents``. They check arguments and hand over to the thread's ``AgentsApi``
(``ctx.caps.agents``); answers are JSON the model reads."""

from __future__ import annotations

import json
from typing import Any, Mapping

from echsd.agent_types import AgentType
from echsd.tools.base import Tool, ToolContext, ToolError, ToolResult, ToolSpec
from echsd.tools.capabilities import AgentsApi

MAX_MESSAGE = 100_000
MAX_WAIT_MS = 3_600_000


def _agents(ctx: ToolContext) -> AgentsApi:
    if ctx.caps.agents is None:
        raise ToolError("this thread cannot have sub-agents here")
    return ctx.caps.agents


def _message(args: dict[str, Any]) -> str:
    message = args.get("message")
    if not isinstance(message, str) or not message.strip():
        raise ToolError("message must be a non-empty string")
    if len(message) > MAX_MESSAGE:
        raise ToolError(f"message is {len(message)} characters; at most {MAX_MESSAGE}")
    return message


def _answer(value: Any) -> ToolResult:
    return ToolResult(json.dumps(value, ensure_ascii=False))


class SpawnAgent:
    """``spawn_agent``; its spec lists the daemon's agent types (shipped and configured), so
    the model knows each preset by its name and description."""

    def __init__(self, agent_types: Mapping[str, AgentType]) -> None:
        presets = "".join(f"\n- {name}: {kind.description}" for name, kind in agent_types.items())
        self.spec = ToolSpec(
            "spawn_agent",
            "Start a sub-agent: a new thread that works on `message` in parallel with you, in your working "
            f"directory. Returns its agent_id; its turn starts at once. `agent_type` picks a preset:{presets}\n"
            "Explicit `model`, `reasoning`, `instructions` and `tools` override the preset; a sub-agent never gets "
            "tools or permissions you lack. Collect its answer with wait_agents.\n"
            "`isolation: \"worktree\"` gives it a git worktree and branch of its own, starting from your files as they "
            "are now (uncommitted changes too): agents working in parallel then cannot overwrite each other's files. "
            "Its changes are committed on its branch when each of its turns ends; bring them into your files with "
            "merge_agent.",
            {
                "type": "object",
                "properties": {
                    "message": {"type": "string", "description": "The task, self-contained: the agent sees nothing else."},
                    "agent_type": {"type": "string", "enum": list(agent_types)},
                    "model": {"type": "string"},
                    "reasoning": {"type": "string", "description": "none | minimal | low | medium | high | xhigh"},
                    "instructions": {"type": "string"},
                    "tools": {"type": "array", "items": {"type": "string"}},
                    "isolation": {"type": "string", "enum": ["none", "worktree"], "description": "worktree: its own git worktree and branch"},
                },
                "required": ["message"],
                "additionalProperties": False,
            },
        )

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        message = _message(args)
        options = {key: args[key] for key in ("agent_type", "model", "reasoning", "instructions", "tools", "isolation") if args.get(key) is not None}
        return _answer(await _agents(ctx).spawn(message, options))


class SendToAgent:
    spec = ToolSpec(
        "send_to_agent",
        "Send a message to one of your sub-agents: queued as its next turn (`queue`, default) or steered "
        "into its running turn (`steer`).",
        {
            "type": "object",
            "properties": {
                "agent_id": {"type": "string"},
                "message": {"type": "string"},
                "mode": {"type": "string", "enum": ["queue", "steer"]},
            },
            "required": ["agent_id", "message"],
            "additionalProperties": False,
        },
    )

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        mode = args.get("mode") or "queue"
        if mode not in ("queue", "steer"):
            raise ToolError("mode must be queue or steer")
        ack = await _agents(ctx).send(str(args["agent_id"]), _message(args), mode)
        return _answer({"agent_id": args["agent_id"], "disposition": ack.get("disposition")})


class WaitAgents:
    spec = ToolSpec(
        "wait_agents",
        "Wait until your sub-agents are done: `all` (default) or `any` of them, at most `timeout_ms`. "
        "Without `agent_ids`, waits for all your direct sub-agents. "
        "Returns each agent's status (running, completed, interrupted, error, paused, killed), its final "
        "message, and for an agent in a worktree its branch and diff_stat (what its branch changed); on a "
        "timeout, the statuses so far and timed_out: true.",
        {
            "type": "object",
            "properties": {
                "agent_ids": {"type": "array", "items": {"type": "string"}},
                "timeout_ms": {"type": "integer"},
                "mode": {"type": "string", "enum": ["any", "all"]},
            },
            "additionalProperties": False,
        },
    )

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        agents = _agents(ctx)
        agent_ids = args.get("agent_ids")
        if agent_ids is None:
            agent_ids = [agent["agent_id"] for agent in await agents.list()]
            if not agent_ids:
                raise ToolError("you have no sub-agents to wait for")
        if not agent_ids or not all(isinstance(a, str) for a in agent_ids):
            raise ToolError("agent_ids must be a non-empty list of agent ids")
        mode = args.get("mode") or "all"
        if mode not in ("any", "all"):
            raise ToolError("mode must be any or all")
        timeout_ms = args.get("timeout_ms")
        if timeout_ms is not None and not 0 <= timeout_ms <= MAX_WAIT_MS:
            raise ToolError(f"timeout_ms must be between 0 and {MAX_WAIT_MS}")
        limit_s = ctx.timeout_s if timeout_ms is None else min(timeout_ms / 1000, ctx.timeout_s)
        return _answer(await agents.wait(agent_ids, limit_s, mode))


class KillAgent:
    spec = ToolSpec(
        "kill_agent",
        "Stop one of your sub-agents for good, with everything it spawned.",
        {"type": "object", "properties": {"agent_id": {"type": "string"}}, "required": ["agent_id"], "additionalProperties": False},
    )

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        result = await _agents(ctx).kill(str(args["agent_id"]))
        return _answer({"agent_id": args["agent_id"], "killed": result.get("killed", [])})


class ListAgents:
    spec = ToolSpec(
        "list_agents",
        "Your sub-agents, with their state, status and last message.",
        {"type": "object", "properties": {}, "additionalProperties": False},
    )

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return _answer({"agents": await _agents(ctx).list()})


class MergeAgent:
    spec = ToolSpec(
        "merge_agent",
        "Merge the branch of one of your sub-agents that worked in a worktree (isolation: worktree) into your "
        "files: a fast-forward, else a merge commit. The agent must be done (not running). Your uncommitted changes "
        "it started from come back with its branch; if the merge would conflict, or overwrite changes you made "
        "since, nothing is changed and the files are named.",
        {"type": "object", "properties": {"agent_id": {"type": "string"}}, "required": ["agent_id"], "additionalProperties": False},
        parallel_safe=False,
        writes=True,
    )

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        agent_id = args.get("agent_id")
        if not isinstance(agent_id, str) or not agent_id:
            raise ToolError("agent_id must be the id spawn_agent returned")
        return _answer(await _agents(ctx).merge(agent_id))


def agent_tools(agent_types: Mapping[str, AgentType]) -> tuple[Tool, ...]:
    return (SpawnAgent(agent_types), SendToAgent(), WaitAgents(), KillAgent(), ListAgents(), MergeAgent())
