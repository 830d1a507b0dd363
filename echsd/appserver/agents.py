"""Sub-agents in the app-server protocol's shapes (sans-IO).

The sub-agent tools are Codex's collab tools: each call is a ``collabAgentToolCall`` item
of the calling thread (``spawn_agent`` -> ``spawnAgent``, ``send_to_agent`` ->
``sendInput``, ``wait_agents`` -> ``wait``, ``kill_agent`` -> ``closeAgent``,
``list_agents`` -> ``listAgents``), started with what the call asks for and completed
with what it answered: the agents it reached (as thread UUIDs, which a client can open)
and their states. ``subagent.spawned`` tells the model and effort a child really got;
``subagent.completed`` (a child's turn ended, whether or not anyone waits) becomes a
``subAgentActivity`` item, so the parent's client sees its agents finish.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping

from echsd.appserver.ids import thread_uuid
from echsd.ids import is_thread_id

TOOLS = {
    "spawn_agent": "spawnAgent",
    "send_to_agent": "sendInput",
    "wait_agents": "wait",
    "kill_agent": "closeAgent",
    "list_agents": "listAgents",
}
# echsd's view of a child's work (``work_status``) -> ``CollabAgentStatus``
STATUS = {
    "idle": "pendingInit",
    "running": "running",
    "completed": "completed",
    "interrupted": "interrupted",
    "error": "errored",
    "paused": "interrupted",
    "killed": "shutdown",
}
FAILED_STATES = frozenset({"errored", "notFound"})
# how a child's turn ended (``subagent.completed`` status) -> ``SubAgentActivityKind``
ACTIVITY = {"completed": "completed"}  # interrupted, error, killed: the agent stopped short


@dataclass
class Spawned:
    """What ``subagent.spawned`` said of a child."""

    agent_type: str | None
    model: str | None
    reasoning: str | None


@dataclass
class AgentCall:
    """A running (or finished) sub-agent tool call, as a ``collabAgentToolCall``."""

    call_id: str
    tool: str
    sender: str  # the calling thread's UUID
    prompt: str | None = None
    model: str | None = None
    reasoning: str | None = None
    receivers: list[str] = field(default_factory=list)  # echsd thread ids
    states: dict[str, dict[str, Any]] = field(default_factory=dict)  # by echsd thread id
    status: str = "inProgress"
    kind = "collabAgentToolCall"

    def finish(self, data: Mapping[str, Any], spawned: Mapping[str, Spawned]) -> None:
        """Apply ``tool.completed``: the tool's JSON answer names the agents and states."""
        answer = _json(data.get("output")) if data.get("ok") else None
        if answer is None:
            self.status = "failed"
            return
        reached = [agent for agent in answer.get("agents") or () if isinstance(agent, dict)]
        for agent in reached:
            self._reached(agent.get("agent_id"), STATUS.get(str(agent.get("status")), "notFound"), agent.get("final_message"))
        if self.tool == "spawnAgent":
            child = spawned.get(str(answer.get("agent_id")))
            if child is not None:
                self.model, self.reasoning = child.model, child.reasoning
            self._reached(answer.get("agent_id"), "running", None)  # its first turn starts at once
        elif self.tool == "sendInput":
            self._reached(answer.get("agent_id"), "running", None)
        elif self.tool == "closeAgent":
            for agent_id in answer.get("killed") or ():
                self._reached(agent_id, "shutdown", None)
        failed = any(state["status"] in FAILED_STATES for state in self.states.values())
        self.status = "failed" if failed else "completed"

    def abandon(self) -> None:
        """The turn ended while the call ran (interrupt, error)."""
        if self.status == "inProgress":
            self.status = "interrupted"

    def _reached(self, agent_id: Any, status: str, message: Any) -> None:
        if not is_thread_id(agent_id):
            return
        if agent_id not in self.receivers:
            self.receivers.append(agent_id)
        self.states[agent_id] = {"status": status, "message": message if isinstance(message, str) and message else None}

    def item(self) -> dict[str, Any]:
        return {
            "type": "collabAgentToolCall",
            "id": self.call_id,
            "tool": self.tool,
            "status": self.status,
            "senderThreadId": self.sender,
            "receiverThreadIds": [thread_uuid(agent_id) for agent_id in self.receivers],
            "prompt": self.prompt,
            "model": self.model,
            "reasoningEffort": self.reasoning,
            "agentsStates": {thread_uuid(agent_id): state for agent_id, state in self.states.items()},
        }


def agent_call(call_id: str, name: str, arguments: Any, sender: str) -> AgentCall | None:
    """Describe a sub-agent tool call from its ``tool.started`` event (None: not one)."""
    tool = TOOLS.get(name)
    if tool is None:
        return None
    args = arguments if isinstance(arguments, dict) else {}
    call = AgentCall(call_id, tool, sender, prompt=_text(args.get("message")), model=_text(args.get("model")), reasoning=_text(args.get("reasoning")))
    ids = args.get("agent_ids") if tool == "wait" else [args.get("agent_id")]
    for agent_id in ids if isinstance(ids, list) else ():
        if is_thread_id(agent_id):
            call.receivers.append(agent_id)
    return call


def spawned(data: Mapping[str, Any]) -> Spawned:
    config = data.get("config") if isinstance(data.get("config"), dict) else {}
    return Spawned(_text(data.get("agent_type")), _text(config.get("model")), _text(config.get("reasoning")))


def activity(item_id: str, data: Mapping[str, Any], child: Spawned | None) -> dict[str, Any] | None:
    """The ``subAgentActivity`` item for ``subagent.completed`` (None: not a thread id)."""
    agent_id = data.get("agent_id")
    if not is_thread_id(agent_id):
        return None
    return {
        "type": "subAgentActivity",
        "id": item_id,
        "kind": ACTIVITY.get(str(data.get("status")), "interrupted"),
        "agentThreadId": thread_uuid(agent_id),
        "agentPath": agent_id,
        "model": child.model if child is not None else None,
        "reasoningEffort": child.reasoning if child is not None else None,
    }


def _json(text: Any) -> dict[str, Any] | None:
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
