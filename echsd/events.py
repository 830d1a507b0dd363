"""The event record shared by the store, the thread runtime and the wire.

An event is what happened on a thread, numbered by a per-thread ``seq`` (1, 2, 3, ...).
Events are written to the durable log first and only then published to live listeners,
so a client never sees an event that a crash could take back.

``EVENT_TYPES`` is the one catalogue of event types and their ``data`` fields; the
protocol documentation is generated from it, and it lists only what the daemon emits (a
test checks that every type has an emitter).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True, eq=True)
class Event:
    """Treat as immutable once emitted. Not ``frozen``: a frozen dataclass's ``__init__``
    costs 4x more, and replay builds hundreds of thousands of these per second."""

    thread_id: str
    seq: int
    type: str
    ts: float
    data: dict[str, Any] = field(default_factory=dict)

    def envelope(self) -> dict[str, Any]:
        """The wire form (CONTRACT.md 3.3)."""
        return {
            "event": self.type,
            "thread_id": self.thread_id,
            "seq": self.seq,
            "ts": self.ts,
            "data": self.data,
        }


@dataclass(frozen=True, slots=True)
class BoardStream:
    """The stream of one blackboard subscription, named by its key prefix: how the wire keys
    a connection's blackboard events (their own seq space) beside its threads' events."""

    prefix: str


StreamKey = str | BoardStream
"""A thread id, or a blackboard subscription: the streams a connection's events belong to."""


def gap_envelope(stream: StreamKey, from_seq: int, to_seq: int, reason: str, ts: float = 0.0) -> dict[str, Any]:
    """The ``events.gap`` event: seqs ``from_seq..to_seq`` of a thread (or of the blackboard,
    for a subscription to a prefix: ``thread_id`` null) were not delivered (CONTRACT.md 3.3).

    Its own seq is ``from_seq - 1``, the last seq delivered before the gap, so it sorts where
    the missing events would have been.
    """
    data = {"from_seq": from_seq, "to_seq": to_seq, "reason": reason}
    if isinstance(stream, BoardStream):
        return {"event": "events.gap", "thread_id": None, "blackboard": stream.prefix, "seq": from_seq - 1, "ts": ts, "data": data}
    return {"event": "events.gap", "thread_id": stream, "seq": from_seq - 1, "ts": ts, "data": data}


@dataclass(frozen=True, slots=True)
class EventSpec:
    description: str
    fields: dict[str, str]
    stored: bool = True  # False: synthesised for one client, never in the log


EVENT_TYPES: dict[str, EventSpec] = {
    "thread.created": EventSpec(
        "A thread was created.", {"thread": "the thread object"}
    ),
    "thread.configured": EventSpec(
        "The thread's config changed (hot swap).",
        {"config": "the full new config", "changed": "list of keys that changed"},
    ),
    "thread.state": EventSpec(
        "The thread's state changed.",
        {"state": "idle | running | paused | killed", "reason": "optional text"},
    ),
    "thread.killed": EventSpec("The thread was killed for good.", {"reason": "text"}),
    "thread.deleted": EventSpec(
        "The thread was deleted (`thread.delete` of it or of an ancestor): the last event of its "
        "stream, numbered after its last stored one; the subscription ends and the id is not_found "
        "from then on. Live only, like its log, it is never replayed.",
        {"root": "the thread whose deletion was asked (this one or an ancestor)"},
        stored=False,
    ),
    "thread.compacted": EventSpec(
        "The thread's context was compacted.",
        {"items_before": "int", "items_after": "int", "reason": "manual | auto | context_length_exceeded"},
    ),
    "turn.started": EventSpec(
        "A turn started.", {"turn_id": "str", "input_ids": "inputs that started it"}
    ),
    "turn.delta": EventSpec(
        "Assistant text streamed from the model.",
        {"turn_id": "str", "item_id": "str", "delta": "text"},
    ),
    "turn.reasoning_delta": EventSpec(
        "Reasoning summary text streamed from the model.",
        {"turn_id": "str", "item_id": "str", "delta": "text"},
    ),
    "item.completed": EventSpec(
        "An item was appended to the history.",
        {"turn_id": "str or null", "item": "the Responses item exactly as stored"},
    ),
    "tool.started": EventSpec(
        "A tool call began running.",
        {"turn_id": "str", "call_id": "str", "name": "str", "arguments": "parsed or raw"},
    ),
    "tool.output": EventSpec(
        "Progress output of a running tool: at most `[tuning] turn_output_bytes` per turn (then one notice chunk); binary control characters (NUL, ...) arrive as U+FFFD.",
        {"turn_id": "str", "call_id": "str", "stream": "stdout | stderr", "chunk": "text"},
    ),
    "tool.completed": EventSpec(
        "A tool call finished; its output item follows as item.completed.",
        {
            "turn_id": "str",
            "call_id": "str",
            "name": "str",
            "ok": "bool",
            "output": "text given to the model",
            "duration_ms": "float",
        },
    ),
    "turn.usage": EventSpec(
        "Token usage of the turn.",
        {
            "turn_id": "str",
            "input_tokens": "int",
            "cached_tokens": "int",
            "output_tokens": "int",
            "reasoning_tokens": "int",
            "cost_usd": "float, estimated from the model catalog's prices (0 where unknown)",
        },
    ),
    "turn.retry": EventSpec(
        "The model request failed and is retried after a delay (clients show it instead of silence).",
        {"turn_id": "str", "attempt": "int, from 1", "max_retries": "int", "delay_s": "float", "reason": "one line", "code": "error code"},
    ),
    "account.rate_limits": EventSpec(
        "The endpoint reported the account's rate limits (ChatGPT plans: windows and credits).",
        {"turn_id": "str", "limits": "list of {limit_id, primary, secondary, credits, ...}"},
    ),
    "plan.updated": EventSpec(
        "The model updated the thread's task plan (update_plan).",
        {"turn_id": "str or null", "explanation": "str or null", "steps": "list of {step, status: pending | in_progress | completed}"},
    ),
    "tool.call": EventSpec(
        "A call of a remote tool, sent to the connection that registered it (`tool.register`).",
        {"call_id": "str", "turn_id": "str", "name": "str", "arguments": "object"},
        stored=False,
    ),
    "subagent.spawned": EventSpec(
        "This thread spawned a sub-agent (a child thread, through spawn_agent).",
        {"agent_id": "the child's thread id", "agent_type": "str", "config": "the child's config"},
    ),
    "subagent.completed": EventSpec(
        "A turn of one of this thread's children ended (or the child was killed while idle).",
        {"agent_id": "str", "turn_id": "str or null", "status": "completed | interrupted | error | killed", "final_message": "str"},
    ),
    "turn.waiting": EventSpec(
        "The turn waits for a free slot before it runs (too many sub-agent turns at once).",
        {"turn_id": "str", "reason": "text"},
    ),
    "run.finished": EventSpec(
        "An autonomous run (`thread.send {steps}`) ended.",
        {"input_id": "the input that started it", "turns": "int", "reason": "done | steps | interrupt | pause | kill | shutdown | error | restart"},
    ),
    "history.pruned": EventSpec(
        "Items left the history (a broken response's partial output, reasoning another model cannot read).",
        {"items_before": "int", "items_after": "int", "reason": "text"},
    ),
    "turn.completed": EventSpec(
        "The turn ended normally.", {"turn_id": "str", "final_text": "last assistant text (a trailing finish marker %%DONE%% cut)", "done": "true when the reply ended an autonomous run"}
    ),
    "turn.interrupted": EventSpec(
        "The turn ended by interrupt, pause, kill or daemon restart.",
        {"turn_id": "str", "reason": "interrupt | pause | kill | shutdown | restart"},
    ),
    "turn.error": EventSpec(
        "The turn ended in error (or the worker crashed).",
        {"turn_id": "str or null", "error": "{code, message}"},
    ),
    "input.queued": EventSpec(
        "An input waits in the thread's queue.", {"input_id": "str", "position": "int"}
    ),
    "input.delivered": EventSpec(
        "An input reached the model's history.",
        {"input_id": "str", "turn_id": "str", "mode": "send | queue | steer"},
    ),
    "input.dropped": EventSpec(
        "An input will never be delivered.", {"input_id": "str", "reason": "text"}
    ),
    "approval.requested": EventSpec(
        "A tool call waits for a client's approval (thread config `approval`); answer with `approval.respond`.",
        {
            "request_id": "str",
            "turn_id": "str",
            "call_id": "str",
            "tool": "str",
            "arguments": "the call's arguments",
            "summary": "one line to decide on (the command, the files a patch touches)",
            "requested_at": "unix float",
        },
    ),
    "approval.resolved": EventSpec(
        "An approval request ended.",
        {"request_id": "str", "call_id": "str", "decision": "approve | deny | timeout | cancelled"},
    ),
    "blackboard.changed": EventSpec(
        "A blackboard entry was written or deleted. Sent on `subscribe {blackboard: PREFIX}`: "
        "`thread_id` is null, `blackboard` names the subscription's prefix, and `seq` counts "
        "the blackboard's changes (its own seq space; a failed write may leave one unused).",
        {
            "key": "str",
            "value": "the JSON value (null when deleted)",
            "version": "int, the key's version after the change (never reused, also across a delete)",
            "writer": "the writing thread's id, or null for a client",
            "updated_at": "unix float",
            "deleted": "bool",
        },
    ),
    "events.gap": EventSpec(
        "Events in [from_seq, to_seq] were not delivered (slow client or retention); "
        "re-read them with thread.events or subscribe since=from_seq-1 (retained ones only). "
        "Its own seq is from_seq-1, the last seq delivered before the gap. On a blackboard "
        "subscription (`thread_id` null, `blackboard` set) the range is of blackboard seqs.",
        {"from_seq": "int", "to_seq": "int", "reason": "backpressure | retention"},
        stored=False,
    ),
}

DELTA_EVENTS = frozenset({"turn.delta", "turn.reasoning_delta", "tool.output"})
