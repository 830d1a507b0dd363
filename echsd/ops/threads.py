"""The thread operations of the wire (CONTRACT.md 3.2): one class each.

Handlers: ops that change one thread run in its actor (``echsd.threads.actor``) or are a
decision of its core (``echsd.threads.core``); the others are the router's node handlers
(``echsd.router``). ``route()`` is overridden only where the place depends on the value.
"""

from __future__ import annotations

from typing import Any

import echsd.ops.examples as ex
from echsd.ops.base import AtNode, Op, OwnerOf, Route, Where, arg, client_msg_id, op, param
from echsd.wire.params import (
    ATTACHMENTS,
    BOOL,
    CONFIG,
    CONFIG_PARAMS,
    COUNT,
    MESSAGE,
    NAME,
    OFFSET,
    PAGE_SIZE,
    SEQ,
    STEPS,
    STRING,
    THREAD_ID,
)

THE_THREAD, PAGE_OFFSET, PAGE_LIMIT = ex.THE_THREAD, ex.PAGE_OFFSET, ex.PAGE_LIMIT


@op(
    "thread.create",
    Where.NODE,
    spread=("config", CONFIG_PARAMS),
    result=ex.THREAD_OBJECT,
    method="create_thread",
    example={"cwd": "/home/me/project", "model": "gpt-5.1"},
    example_result=ex.THREAD,
    notes="With `parent`, the child is created by its parent's node (which refuses it while the parent "
    "is being killed or deleted); with `node`, it then runs on that node.",
)
class Create(Op):
    """Creates a thread; missing config keys take the daemon's defaults."""

    config: dict[str, Any] | None = arg()
    parent: str | None = param(THREAD_ID, "parent thread id (the child is created through it)")
    loosen_policy: bool | None = param(
        BOOL,
        "(added) with `parent`: allow `writes`, `approval`, `sandbox`, `network` or `writable_roots` looser than the parent's (else refused; keys not given are the parent's)",
    )
    node: str | None = param(NAME, "(added) the node to run the thread on (several daemons over PostgreSQL); default: the one connected to")
    worktree: bool | None = param(
        BOOL,
        "(added) work in a git worktree of its own, on a new branch `echs/<id prefix>`, made from `base`; the cwd is "
        "the same subdirectory in it. Outside a git repository the thread works in `cwd` itself (the answer's `note` says so)",
    )
    base: str | None = param(
        NAME, "(added) with `worktree`: the git ref to start from (default: the cwd's current state, uncommitted changes included)"
    )

    def route(self) -> Route:
        return OwnerOf(self.parent) if self.parent is not None else AtNode(self.node)


@op(
    "thread.list",
    Where.HERE,
    result=ex.PAGED.format(whole=f"list of {ex.THREAD_OBJECT}s"),
    method="list_threads",
    example={},
    example_result=[ex.THREAD],
    notes=ex.PAGE_NOTES,
)
class ListThreads(Op):
    """Every thread, oldest first (or a page of them)."""

    offset: int | None = param(OFFSET, PAGE_OFFSET)
    limit: int | None = param(PAGE_SIZE, PAGE_LIMIT)


@op("thread.get", Where.HERE, result=ex.THREAD_OBJECT, method="get_thread", positional=("thread_id",), example={"thread_id": ex.TID}, example_result=ex.THREAD)
class Get(Op):
    """One thread."""

    thread_id: str = param(THREAD_ID, THE_THREAD, required=True)


@op(
    "thread.configure",
    Where.OWNER,
    result=ex.THREAD_OBJECT,
    method="configure",
    positional=("thread_id", "config"),
    example={"thread_id": ex.TID, "config": {"reasoning": "high", "tools": "+view_image"}},
    example_result=ex.THREAD,
)
class Configure(Op):
    """Hot-swaps config; a running turn uses it from its next model request."""

    thread_id: str = param(THREAD_ID, THE_THREAD, required=True)
    config: dict[str, Any] = param(
        CONFIG, "any of the keys `thread.create` takes (`cwd`, `model`, `reasoning`, `instructions`, `tools`, `writes`, `approval`, `sandbox`, `network`, ...), checked as there", required=True
    )


@op(
    "thread.send",
    Where.OWNER,
    result="acknowledgement `{input_id, disposition, thread_id}`, disposition `started | queued | steered`",
    method="send",
    positional=("thread_id", "text"),
    example={"thread_id": ex.TID, "text": "run the tests", "mode": "queue", "client_msg_id": "cli-1"},
    example_result={"input_id": "in_9a8b7c6d5e4f3a2b", "disposition": "queued", "thread_id": ex.TID},
)
class Send(Op):
    """Sends input: starts a turn, queues it or steers the running turn (CONTRACT.md 2.2)."""

    thread_id: str = param(THREAD_ID, THE_THREAD, required=True)
    text: str = param(MESSAGE, "the input text", required=True)
    mode: str | None = param(STRING, "default `send`", choices=("send", "queue", "steer"))
    client_msg_id: str | None = param(NAME, "idempotency key: a repeat is acknowledged again, never delivered twice")
    steps: int | None = param(STEPS, "> 1: start an autonomous run of up to this many turns (default: the thread's `steps`)")
    attachments: list[dict[str, Any]] | None = param(
        ATTACHMENTS, "files sent with the text: `{type: text, name, text}` or `{type: image, name, image_url: data URL}`"
    )

    def for_forwarding(self) -> Send:
        """Forwarded with an idempotency key, so running it twice (the owner died after running
        it, before answering) delivers it once."""
        if self.client_msg_id is not None:
            return self
        return Send(**{**_values(self), "client_msg_id": client_msg_id()})


@op(
    "thread.interrupt",
    Where.OWNER,
    result="`{thread_id, interrupted, state, ...}`; `interrupted` is false when no turn was running",
    method="interrupt",
    positional=("thread_id",),
    example={"thread_id": ex.TID, "clear_queue": False},
    example_result={"thread_id": ex.TID, "interrupted": True, "state": "idle"},
)
class Interrupt(Op):
    """Ends the running turn as `turn.interrupted`; the queue then continues."""

    thread_id: str = param(THREAD_ID, THE_THREAD, required=True)
    clear_queue: bool | None = param(BOOL, "also drop the queued inputs (default false)")


@op(
    "thread.pause",
    Where.OWNER,
    result="`{thread_id, interrupted, state, ...}`",
    method="pause",
    positional=("thread_id",),
    example={"thread_id": ex.TID},
    example_result={"thread_id": ex.TID, "interrupted": True, "state": "paused"},
)
class Pause(Op):
    """Interrupts the running turn and takes no new turn until resume."""

    thread_id: str = param(THREAD_ID, THE_THREAD, required=True)


@op(
    "thread.resume",
    Where.OWNER,
    result="`{thread_id, resumed, state}`",
    method="resume",
    positional=("thread_id",),
    example={"thread_id": ex.TID},
    example_result={"thread_id": ex.TID, "resumed": True, "state": "idle"},
)
class Resume(Op):
    """Resumes a paused thread (succeeds and changes nothing otherwise)."""

    thread_id: str = param(THREAD_ID, THE_THREAD, required=True)


@op(
    "thread.kill",
    Where.HERE,
    result="`{thread_id, killed: [thread ids], state}`",
    method="kill",
    positional=("thread_id",),
    example={"thread_id": ex.TID},
    example_result={"thread_id": ex.TID, "killed": [ex.TID], "state": "killed"},
    notes="The tree is walked top down, each thread killed (on the node that runs it) before its "
    "children are listed, so no child can appear under a killed thread.",
)
class Kill(Op):
    """Interrupts, then stops the thread and its descendants for good."""

    thread_id: str = param(THREAD_ID, THE_THREAD, required=True)


@op(
    "thread.history",
    Where.OWNER,
    result=ex.PAGED.format(whole="list of Responses items"),
    method="history",
    positional=("thread_id",),
    example={"thread_id": ex.TID},
    example_result=[{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
    notes=ex.PAGE_NOTES,
)
class History(Op):
    """The thread's Responses items, exactly as sent to the model (or a page of them)."""

    thread_id: str = param(THREAD_ID, THE_THREAD, required=True)
    offset: int | None = param(OFFSET, PAGE_OFFSET)
    limit: int | None = param(PAGE_SIZE, PAGE_LIMIT)


@op(
    "thread.events",
    Where.HERE,
    result="list of event envelopes; a range the log no longer holds appears as one `events.gap`",
    method="thread_events",
    positional=("thread_id",),
    example={"thread_id": ex.TID, "since": 6, "limit": 1},
    example_result=[ex.EVENT],
    notes="A page also stops before it would exceed half the frame limit (`[tuning] "
    "max_message_bytes`), holding at least one event: read on from the last seq until a "
    "page comes back empty.",
)
class Events(Op):
    """Stored events with `seq > since`, oldest first, at most `limit` (and at most 10,000)."""

    thread_id: str = param(THREAD_ID, THE_THREAD, required=True)
    since: int | None = param(SEQ, "default 0")
    limit: int | None = param(COUNT, "default and maximum 10,000")


@op(
    "thread.compact",
    Where.OWNER,
    result="`{thread_id, items_before, items_after}`",
    method="compact",
    positional=("thread_id",),
    example={"thread_id": ex.TID},
    example_result={"thread_id": ex.TID, "items_before": 40, "items_after": 3},
    background=True,
    timeout_s=300.0,
    notes="Runs in the background: requests sent after it on the same connection are "
    "answered without waiting for it, so its answer may come after theirs.",
)
class Compact(Op):
    """Compacts the thread's context now."""

    thread_id: str = param(THREAD_ID, THE_THREAD, required=True)


@op(
    "thread.tree",
    Where.HERE,
    result="list of `{thread_id, state, children: [...]}` (nested)",
    method="thread_tree",
    positional=("thread_id",),
    example={"thread_id": ex.TID},
    example_result=[{"thread_id": ex.TID, "state": "running", "children": [{"thread_id": ex.CHILD, "state": "idle", "children": []}]}],
)
class Tree(Op):
    """The thread tree under a thread, or under every root, with states."""

    thread_id: str | None = param(THREAD_ID, "the top of the tree (default: every root thread)")


@op(
    "thread.delete",
    Where.HERE,
    result="`{deleted: [thread ids]}`",
    method="delete_thread",
    positional=("thread_id",),
    example={"thread_id": ex.TID},
    example_result={"deleted": [ex.TID, ex.CHILD]},
    notes="Refused with `invalid_state` while the thread or a descendant runs (interrupt or kill it first). "
    "Their event streams end; their ids are not_found from then on. Their snapshot refs (`refs/echsd/<id>/...`) go, "
    "and their worktrees are removed (their branches stay) unless `keep_worktree`.",
)
class Delete(Op):
    """Deletes a thread with its descendants, history and events."""

    thread_id: str = param(THREAD_ID, THE_THREAD, required=True)
    keep_worktree: bool | None = param(BOOL, "(added) keep the threads' git worktrees on disk (default: removed; their branches always stay)")


def _values(value: Op) -> dict[str, Any]:
    return {name: getattr(value, name) for name in value.__dataclass_fields__}  # type: ignore[attr-defined]


@op(
    "thread.rename",
    Where.OWNER,
    result=ex.THREAD_OBJECT,
    method="rename_thread",
    positional=("thread_id", "name"),
    example={"thread_id": ex.TID, "name": "fix the flaky test"},
    example_result={**ex.THREAD, "name": "fix the flaky test"},
    notes="The name is for people (`echs ls`, `echs show`, a Codex client's thread list); the id stays the thread's address.",
)
class Rename(Op):
    """Sets the thread's display name (`null` clears it)."""

    thread_id: str = param(THREAD_ID, THE_THREAD, required=True)
    name: str | None = param(NAME, "the display name (a line of text)", required=True, nullable=True)


WHY_EVENTS = 20
MAX_WHY_EVENTS = 200


@op(
    "thread.why",
    Where.OWNER,
    result="the " + ex.THREAD_OBJECT + " with `last_events` (its last events, streamed deltas left out, oldest first) "
    "and `streamed` (`{events, bytes, last_ts}` of the deltas after the last of them)",
    method="why",
    positional=("thread_id",),
    example={"thread_id": ex.TID, "limit": 1},
    example_result={
        **ex.THREAD,
        "state": "running",
        "active_turn": "turn_5f0c2a9d11e24b7a",
        "waiting_on": {"kind": "tool", "tool": "exec_command", "call_id": "call_7", "since": 1767225601.5, "runtime_s": 600.2,
                       "pid": 4242, "command": "make test", "turn_id": "turn_5f0c2a9d11e24b7a"},
        "last_events": [{**ex.EVENT, "event": "tool.started", "data": {"turn_id": "turn_5f0c2a9d11e24b7a", "call_id": "call_7",
                                                                      "name": "exec_command", "arguments": {"cmd": "make test"}}}],
        "streamed": {"events": 0, "bytes": 0, "last_ts": None},
    },
    notes="`waiting_on` is `null` (idle with nothing queued, or killed) or `{kind, since?, ...}`, kind one of `model` "
    "(`model`, `last_event_age_s`), `tool` (`tool`, `call_id`, `runtime_s`, `pid` and `command` of the process it is "
    "attached to), `approval` (`request_id`, `tool`), `agents` (`agents`: ids), `retry` (`until`, `in_s`, `attempt`, "
    "`max_retries`, `reason`), `queue` (`behind`, `queued`), `compaction`, `turn`, `paused` (`queued`), `given_up` "
    "(`reason`). While a turn runs, it also has `turn_id`, and `queued`/`behind` count inputs queued behind it. "
    "Answered by the node that runs the thread (`thread.get` on another node sees only its stored state).",
)
class Why(Op):
    """What a thread waits on now, with its last events (`echs why`)."""

    thread_id: str = param(THREAD_ID, THE_THREAD, required=True)
    limit: int | None = param(COUNT, f"how many of the last events (default {WHY_EVENTS}, at most {MAX_WHY_EVENTS})")
