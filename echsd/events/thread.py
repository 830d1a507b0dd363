"""Event types of a thread's life, its inputs, its sub-agents and approvals (one class each)."""

from __future__ import annotations

from typing import Any

from echsd.events.base import EventData, doc, event


@event("thread.created")
class ThreadCreated(EventData):
    """A thread was created."""

    thread: Any = doc("the thread object")


@event("thread.configured")
class ThreadConfigured(EventData):
    """The thread's config changed (hot swap)."""

    config: Any = doc("the full new config")
    changed: list[Any] = doc("list of keys that changed")


@event("thread.state")
class StateChanged(EventData):
    """The thread's state changed."""

    state: Any = doc("idle | running | paused | killed")
    reason: Any = doc("optional text")


@event("thread.killed")
class ThreadKilled(EventData):
    """The thread was killed for good."""

    reason: str = doc("text")


@event("thread.deleted", stored=False)
class ThreadDeleted(EventData):
    """The thread was deleted (`thread.delete` of it or of an ancestor): the last event of
    its stream, numbered after its last stored one; the subscription ends and the id is
    not_found from then on. Live only, like its log, it is never replayed."""

    root: Any = doc("the thread whose deletion was asked (this one or an ancestor)")


@event("thread.given_up")
class ThreadGivenUp(EventData):
    """The thread's worker kept crashing and was given up: requests are refused
    (`unavailable`; `kill` still works) until the next request after `retry_in_s`, which
    starts it again."""

    reason: str = doc("text")
    retry_in_s: float = doc("float")


@event("thread.compacted")
class ThreadCompacted(EventData):
    """The thread's context was compacted."""

    items_before: int = doc("int")
    items_after: int = doc("int")
    reason: Any = doc("manual | auto | context_length_exceeded")
    turns_folded: Any = doc("optional int: turns whose items are now only in the summary (undo and fork cannot reach them)")


@event("thread.undone")
class ThreadUndone(EventData):
    """Turns were undone (`thread.undo`): their files put back as they were, their items
    left the history."""

    turns: list[Any] = doc("the turns' numbers")
    turn_ids: list[Any] = doc("their ids")
    restored: list[Any] = doc("paths (relative to the cwd) written back as they were")
    removed: list[Any] = doc("paths the turns had created, deleted")
    kept: list[Any] = doc("paths changed by someone else since, left as they are (without force)")
    items_removed: int = doc("int: history items that went")
    note: Any = doc("optional: why no file was touched (no git repository, no snapshot)")
    commit: Any = doc("optional: a worktree thread's commit of the undo on its branch")
    commit_error: Any = doc("optional: why that commit could not be made")


@event("subagent.spawned")
class SubagentSpawned(EventData):
    """This thread spawned a sub-agent (a child thread, through spawn_agent)."""

    agent_id: Any = doc("the child's thread id")
    agent_type: str = doc("str")
    config: Any = doc("the child's config")
    worktree: Any = doc("{path, branch} of the child's own git worktree, or null")


@event("subagent.completed")
class SubagentCompleted(EventData):
    """A turn of one of this thread's children ended (or the child was killed while idle)."""

    agent_id: str = doc("str")
    turn_id: str | None = doc("str or null")
    status: Any = doc("completed | interrupted | error | killed")
    final_message: str = doc("str")
    branch: Any = doc("the child's branch (a child in a worktree), or null")
    diff_stat: Any = doc("{files, insertions, deletions}: what its branch changed (a worktree child), else what the turn changed; null: nothing known")


@event("run.finished")
class RunFinished(EventData):
    """An autonomous run (`thread.send {steps}`) ended."""

    input_id: Any = doc("the input that started it")
    turns: int = doc("int")
    reason: Any = doc("done | steps | interrupt | pause | kill | shutdown | error | restart")


@event("history.pruned")
class HistoryPruned(EventData):
    """Items left the history (a broken response's partial output, reasoning another model
    cannot read)."""

    items_before: int = doc("int")
    items_after: int = doc("int")
    reason: str = doc("text")


@event("input.queued")
class InputQueued(EventData):
    """An input waits in the thread's queue."""

    input_id: str = doc("str")
    position: int = doc("int")


@event("input.delivered")
class InputDelivered(EventData):
    """An input reached the model's history."""

    input_id: str = doc("str")
    turn_id: str = doc("str")
    mode: Any = doc("send | queue | steer")


@event("input.dropped")
class InputDropped(EventData):
    """An input will never be delivered."""

    input_id: str = doc("str")
    reason: str = doc("text")


@event("approval.requested")
class ApprovalRequested(EventData):
    """A tool call waits for a client's approval (thread config `approval` and its rules, or
    an escalation out of the sandbox); answer with `approval.respond`."""

    request_id: str = doc("str")
    turn_id: str = doc("str")
    call_id: str = doc("str")
    tool: str = doc("str")
    arguments: Any = doc("the call's arguments")
    summary: Any = doc("one line to decide on (the command, the files a patch touches; `outside the sandbox: ` first for an escalation)")
    rule: Any = doc("the command prefix approving for the thread (`always`) would allow, or null")
    requested_at: float = doc("unix float")


@event("approval.resolved")
class ApprovalResolved(EventData):
    """An approval request ended."""

    request_id: str = doc("str")
    call_id: str = doc("str")
    decision: Any = doc("approve | deny | timeout | cancelled")
    always: Any = doc("true when approved for the thread (absent otherwise)")
