"""What a thread is waiting on now: the thread object's ``waiting_on`` (CONTRACT.md 0b).

A thread that has not moved for ten minutes is waiting on something: the model's stream,
a tool (which process, since when), a person's approval, its sub-agents, a retry's
backoff, a sub-agent slot, or it is paused or given up. The running turn's tasks note what
they start and finish here (a few assignments per model request or tool call, never per
delta); ``waiting_on`` turns the notes and the thread's state into one small object.

``Activity`` belongs to the thread's record (memory only: after a restart a thread waits
on nothing until its next turn starts). It is written by the actor's own tasks (the turn,
its tool calls) and read by anyone answering ``thread.get``/``thread.list``/``thread.why``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Iterator, Protocol

from echsd.threads.state import ThreadState

KINDS = ("model", "tool", "approval", "agents", "retry", "queue", "compaction", "turn", "paused", "given_up")
"""Every ``waiting_on.kind``; the first three to ``turn`` describe a running turn."""


class ThreadView(Protocol):
    """What ``waiting_on`` reads of a thread's core."""

    @property
    def state(self) -> ThreadState: ...
    @property
    def queued(self) -> int: ...
    @property
    def compaction(self) -> int | None: ...
    @property
    def active_turn(self) -> str | None: ...
    @property
    def workspace_busy(self) -> str | None: ...


class BusyProcesses(Protocol):
    """The thread's exec sessions: the processes a tool call is attached to now."""

    def busy(self) -> list[tuple[int, str, float]]:
        """``(pid, command, started at trio time)`` of each session a call is attached to."""


@dataclass(slots=True)
class ToolWork:
    name: str
    call_id: str
    since: float  # unix time
    approval: str | None = None  # the request id while the call waits for an approval
    approval_since: float | None = None
    agents: tuple[str, ...] | None = None  # the sub-agents a wait_agents call waits for
    agents_since: float | None = None


@dataclass(slots=True)
class Activity:
    model_since: float | None = None  # a model request is in flight (unix time it was sent)
    model: str | None = None
    retry_until: float | None = None  # the model request waits for a retry (unix time it is sent again)
    retry: dict[str, Any] | None = None  # attempt, max_retries, reason of that retry
    slot_since: float | None = None  # the turn waits for a sub-agent slot
    slot_reason: str | None = None
    compaction_since: float | None = None
    tools: dict[str, ToolWork] = field(default_factory=dict)  # by call id
    processes: BusyProcesses | None = None  # set by the actor

    # ---- notes from the running turn ------------------------------------------------------

    def model_started(self, model: str) -> None:
        self.model_since, self.model = time.time(), model
        self.retry_until = self.retry = None

    def model_ended(self) -> None:
        self.model_since = self.model = self.retry_until = self.retry = None

    def retrying(self, delay_s: float, attempt: int, max_retries: int, reason: str) -> None:
        self.retry_until = time.time() + delay_s
        self.retry = {"attempt": attempt, "max_retries": max_retries, "reason": reason}

    def tool_started(self, name: str, call_id: str) -> ToolWork:
        work = self.tools[call_id] = ToolWork(name, call_id, time.time())
        return work

    def tool_ended(self, call_id: str) -> None:
        self.tools.pop(call_id, None)

    def turn_ended(self) -> None:
        self.model_ended()
        self.tools.clear()
        self.slot_since = self.slot_reason = self.compaction_since = None

    def approving(self, call_id: str, request_id: str | None) -> None:
        work = self.tools.get(call_id)
        if work is not None:
            work.approval, work.approval_since = request_id, (time.time() if request_id else None)

    def waiting_for_agents(self, call_id: str | None, agent_ids: tuple[str, ...] | None) -> None:
        for work in self._calls(call_id, "wait_agents"):
            work.agents, work.agents_since = agent_ids, (time.time() if agent_ids is not None else None)

    def _calls(self, call_id: str | None, name: str) -> Iterator[ToolWork]:
        if call_id is not None and call_id in self.tools:
            yield self.tools[call_id]
            return
        yield from (work for work in self.tools.values() if work.name == name)


def waiting_on(core: ThreadView, activity: Activity | None, *, last_event_at: float | None, given_up: str | None) -> dict[str, Any] | None:
    """What the thread waits on, or None (idle with nothing queued, or killed).

    One object with a ``kind`` (``KINDS``), ``since`` (unix time) where known and the
    details of that kind. A running turn's most telling wait wins: an approval, then
    sub-agents, then a tool, then a sub-agent slot, a retry's backoff, the model's stream.
    Inputs queued behind the running turn are counted in ``queued`` and ``behind``.
    """
    now = time.time()
    if given_up is not None:
        return {"kind": "given_up", "reason": given_up}
    state = core.state
    if state is ThreadState.KILLED:
        return None
    if state is ThreadState.PAUSED:
        return {"kind": "paused", "queued": core.queued}
    if state is ThreadState.IDLE:
        if core.queued:
            behind = "compaction" if core.compaction is not None else core.workspace_busy or "the thread's next turn"  # e.g. "an undo"
            return {"kind": "queue", "queued": core.queued, "behind": behind}
        return None
    found = _turn_wait(activity, now, last_event_at) if activity is not None else None
    found = found or {"kind": "turn", "since": None}
    found["turn_id"] = core.active_turn
    if core.queued:
        found["queued"] = core.queued
        found["behind"] = core.active_turn
    return found


def _turn_wait(activity: Activity, now: float, last_event_at: float | None) -> dict[str, Any] | None:
    tools = sorted(activity.tools.values(), key=lambda work: work.since)
    for work in tools:
        if work.approval is not None:
            return {"kind": "approval", "request_id": work.approval, "tool": work.name, "call_id": work.call_id, "since": work.approval_since}
    for work in tools:
        if work.agents is not None:
            return {"kind": "agents", "agents": list(work.agents), "call_id": work.call_id, "since": work.agents_since}
    if tools:
        work = tools[0]
        found: dict[str, Any] = {"kind": "tool", "tool": work.name, "call_id": work.call_id, "since": work.since, "runtime_s": round(now - work.since, 3)}
        if len(tools) > 1:
            found["tools"] = len(tools)
        busy = activity.processes.busy() if activity.processes is not None else []
        if busy:
            pid, command, _started = busy[0]
            found["pid"], found["command"] = pid, command
        return found
    if activity.slot_since is not None:
        return {"kind": "queue", "since": activity.slot_since, "behind": "sub-agent slots", "reason": activity.slot_reason}
    if activity.retry_until is not None and activity.retry_until > now:
        return {"kind": "retry", "until": activity.retry_until, "in_s": round(activity.retry_until - now, 3), **(activity.retry or {})}
    if activity.compaction_since is not None:
        return {"kind": "compaction", "since": activity.compaction_since}
    if activity.model_since is not None:
        found = {"kind": "model", "model": activity.model, "since": activity.model_since}
        if last_event_at is not None:
            found["last_event_age_s"] = round(max(0.0, now - last_event_at), 3)
        return found
    return None
