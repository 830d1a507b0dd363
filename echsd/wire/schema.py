"""Every wire operation, defined once: name, params, result, handler, client method.

From ``OPS`` come request validation, dispatch (each spec's ``handler``), the client
library's methods (``echsd.wire.requests``) and ``docs/protocol.md``, so none of them can
drift from another. Params are checked for shape and size (``echsd.wire.params``: type,
required, allowed values, limits, nesting); meaning (an existing thread, a valid cwd) is
checked by the layer that owns it. An explicit ``null`` for an optional param means "not
given".

Handlers reach the daemon only through the ``OpContext`` they are given (a connection:
its thread service and its subscriptions), so importing this module (as the thin client
does) loads nothing of the daemon. To add an op: add its ``OpSpec`` here, implement what
its handler calls, then regenerate the docs with ``python -m echsd.wire.docs > docs/protocol.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Protocol

from echsd.wire.codec import PROTOCOL_VERSION
from echsd.errors import BadRequest
from echsd.wire.params import (
    ATTACHMENTS,
    BB_KEY,
    BB_PREFIX,
    BOOL,
    CONFIG,
    CONFIG_PARAMS,
    COUNT,
    JSON,
    MAX_DEPTH,
    MAX_PAGE,
    MESSAGE,
    NAME,
    OFFSET,
    OUTPUT,
    PAGE_SIZE,
    SEQ,
    SPECS,
    STEPS,
    STRING,
    THREAD_ID,
    THREAD_OR_ALL,
    TOKEN,
    Param,
    ParamsError,
    nesting_depth,
)

if TYPE_CHECKING:  # the client imports this module: nothing of the daemon at run time
    from echsd.blackboard.service import BlackboardService
    from echsd.threads.service import ThreadService
    from echsd.tools.capabilities import Peer
    from echsd.wire.board_subscriptions import BoardSubscriptions
    from echsd.wire.subscriptions import Subscriptions

    class OpContext(Peer, Protocol):
        """What a handler may use: the connection it serves (itself a ``Peer``: remote
        tools are called back on it)."""

        service: ThreadService
        subscriptions: Subscriptions
        blackboard: BlackboardService
        board_subscriptions: BoardSubscriptions

        async def authenticate(self, token: str) -> dict[str, Any]: ...



Handler = Callable[["OpContext", dict[str, Any]], Any]  # may return an awaitable


@dataclass(frozen=True)
class OpSpec:
    name: str
    summary: str
    params: tuple[Param, ...]
    result: str
    example_params: dict[str, Any]
    example_result: Any
    handler: Handler
    method: str | None = None  # the client library's method (None: none, e.g. hello)
    positional: tuple[str, ...] = ()  # params that method takes positionally, in order
    background: bool = False  # answered when done; later requests are not held up
    notes: str = ""
    by_name: dict[str, Param] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_name", {p.name: p for p in self.params})

    def validate(self, params: dict[str, Any]) -> dict[str, Any]:
        """The params with nulls removed; raises ``ParamsError`` naming the bad field."""
        unknown = sorted(str(k) for k in params if k not in self.by_name)
        if unknown:
            raise ParamsError(f"unknown param(s) for {self.name}: {', '.join(unknown)}")
        clean: dict[str, Any] = {}
        for param in self.params:
            value = params.get(param.name)
            if value is None:
                if param.nullable and param.name in params:
                    clean[param.name] = None
                    continue
                if param.required:
                    raise ParamsError(f"missing param '{param.name}'")
                continue
            if nesting_depth(value) > MAX_DEPTH:
                raise ParamsError(f"param '{param.name}' nests maps/arrays more than {MAX_DEPTH} levels deep")
            param.check(value)
            clean[param.name] = value
        return clean


def _thread(description: str = "the thread") -> Param:
    return Param("thread_id", THREAD_ID, description, required=True)



_PAGING = (
    Param("offset", OFFSET, "page: skip this many (default 0)"),
    Param("limit", PAGE_SIZE, f"page: at most this many (default and maximum {MAX_PAGE:,})"),
)
_PAGED = (
    "without `offset` and `limit`: {whole}; with either: one page "
    "`{{items, offset, next_offset, total}}` (`next_offset` null after the last page)"
)
_PAGE_NOTES = (
    "A page also stops before it would exceed half the frame limit (`[tuning] max_message_bytes`), "
    "holding at least one item; read on from `next_offset`. An answer without paging that "
    "would exceed the frame limit is refused with `too_large`."
)


def _key() -> Param:
    return Param("key", BB_KEY, "the blackboard key (no control characters)", required=True)


_IF_VERSION = Param("if_version", SEQ, "only if the key is at this version now; `0`: only if it is absent (create only)")


def _subscription(params: dict[str, Any]) -> tuple[str | None, str | None]:
    """(thread_id, blackboard prefix) of ``subscribe``/``unsubscribe``: exactly one given."""
    thread_id, prefix = params.get("thread_id"), params.get("blackboard")
    if (thread_id is None) == (prefix is None):
        raise BadRequest("give exactly one of 'thread_id' and 'blackboard'")
    return thread_id, prefix


def _subscribe(c: OpContext, params: dict[str, Any]) -> Any:
    thread_id, prefix = _subscription(params)
    if prefix is not None:
        return c.board_subscriptions.subscribe(prefix, params.get("since"))
    return c.subscriptions.subscribe(thread_id, params.get("since"))


def _unsubscribe(c: OpContext, params: dict[str, Any]) -> Any:
    thread_id, prefix = _subscription(params)
    if prefix is not None:
        return c.board_subscriptions.unsubscribe(prefix)
    return c.subscriptions.unsubscribe(thread_id)


_TID = "thr_0123456789abcdef"
_CONFIG = {
    "cwd": "/home/me/project",
    "model": "gpt-5.1",
    "reasoning": "medium",
    "instructions": "You are a coding agent ...",
    "tools": ["exec_command", "read_file", "apply_patch"],
}
_THREAD = {
    "thread_id": _TID,
    "state": "idle",
    "parent": None,
    "children": [],
    "config": _CONFIG,
    "queued": 0,
    "usage": {"turns": 1, "input_tokens": 1200, "cached_tokens": 0, "output_tokens": 80, "reasoning_tokens": 0},
    "created_at": 1767225600.0,
    "active_turn": None,
    "last_seq": 7,
}
_THREAD_OBJECT = "thread object (CONTRACT.md 2.5)"
_ENTRY_OBJECT = "entry object `{key, value, version, writer, updated_at}`"
_ENTRY = {"key": "team/plan", "value": {"steps": ["parse", "test"]}, "version": 3, "writer": _TID, "updated_at": 1767225602.0}
_APPROVAL = {
    "request_id": "apr_0a1b2c3d4e5f6071",
    "thread_id": _TID,
    "turn_id": "turn_5f0c2a9d11e24b7a",
    "call_id": "call_7",
    "tool": "exec_command",
    "arguments": {"cmd": "rm -rf build"},
    "summary": "rm -rf build",
    "requested_at": 1767225601.5,
}
_EVENT = {
    "event": "turn.delta",
    "thread_id": _TID,
    "seq": 7,
    "ts": 1767225601.25,
    "data": {"turn_id": "turn_5f0c2a9d11e24b7a", "item_id": "msg_1", "delta": "Hel"},
}

OPS: tuple[OpSpec, ...] = (
    OpSpec(
        "hello",
        "Authenticates the connection; must be the first request.",
        (
            Param("protocol", COUNT, f"protocol version, {PROTOCOL_VERSION}", required=True, choices=(PROTOCOL_VERSION,)),
            Param("token", TOKEN, "the client token (`echsd token`)", required=True),
        ),
        "`protocol`, `version` (daemon version), `server`, `connection` (this connection's id)",
        {"protocol": 1, "token": "<token>"},
        {"protocol": 1, "version": "0.1.0", "server": "echsd", "connection": 7},
        notes="Anything else as the first request, a wrong token or an unsupported protocol "
        "is answered with `unauthorized` and the connection is closed. A second `hello` on an "
        "authenticated connection is a `bad_request`.",
        handler=lambda c, p: c.authenticate(p["token"]),
    ),
    OpSpec(
        "status",
        "Daemon version, uptime, provider, model and thread counts.",
        (),
        "status object (CONTRACT.md 2.5)",
        {},
        {
            "version": "0.1.0",
            "provider": "openai",
            "model": "gpt-5.1",
            "uptime_s": 42.5,
            "threads": {"total": 2, "idle": 1, "running": 1, "paused": 0, "killed": 0},
            "node": "build-1",
            "nodes": [{"node_id": "build-1", "alive": True, "lease_expires_in_s": 8.2, "threads": 2}],
        },
        handler=lambda c, p: c.service.status_all(),
        method="status",
    ),
    OpSpec(
        "thread.create",
        "Creates a thread; missing config keys take the daemon's defaults.",
        (
            *CONFIG_PARAMS,
            Param("parent", THREAD_ID, "parent thread id (the child is created through it)"),
            Param("node", NAME, "(added) the node to run the thread on (several daemons over PostgreSQL); default: the one connected to"),
        ),
        _THREAD_OBJECT,
        {"cwd": "/home/me/project", "model": "gpt-5.1"},
        _THREAD,
        handler=lambda c, p: c.service.create(**p),
        method="create_thread",
    ),
    OpSpec(
        "thread.list",
        "Every thread, oldest first (or a page of them).",
        _PAGING,
        _PAGED.format(whole=f"list of {_THREAD_OBJECT}s"),
        {},
        [_THREAD],
        notes=_PAGE_NOTES,
        handler=lambda c, p: c.service.list_all(**p),
        method="list_threads",
    ),
    OpSpec(
        "thread.get",
        "One thread.",
        (_thread(),),
        _THREAD_OBJECT,
        {"thread_id": _TID},
        _THREAD,
        handler=lambda c, p: c.service.find(**p),
        method="get_thread",
        positional=("thread_id",),
    ),
    OpSpec(
        "thread.configure",
        "Hot-swaps config; a running turn uses it from its next model request.",
        (_thread(), Param("config", CONFIG, "any of `cwd`, `model`, `reasoning`, `instructions`, `tools`, `writes`, `approval`, checked as in `thread.create`", required=True)),
        _THREAD_OBJECT,
        {"thread_id": _TID, "config": {"reasoning": "high", "tools": "+view_image"}},
        _THREAD,
        handler=lambda c, p: c.service.configure(**p),
        method="configure",
        positional=("thread_id", "config"),
    ),
    OpSpec(
        "thread.send",
        "Sends input: starts a turn, queues it or steers the running turn (CONTRACT.md 2.2).",
        (
            _thread(),
            Param("text", MESSAGE, "the input text", required=True),
            Param("mode", STRING, "default `send`", choices=("send", "queue", "steer")),
            Param("client_msg_id", NAME, "idempotency key: a repeat is acknowledged again, never delivered twice"),
            Param("steps", STEPS, "> 1: start an autonomous run of up to this many turns (default: the thread's `steps`)"),
            Param("attachments", ATTACHMENTS, "files sent with the text: `{type: text, name, text}` or `{type: image, name, image_url: data URL}`"),
        ),
        "acknowledgement `{input_id, disposition, thread_id}`, disposition `started | queued | steered`",
        {"thread_id": _TID, "text": "run the tests", "mode": "queue", "client_msg_id": "cli-1"},
        {"input_id": "in_9a8b7c6d5e4f3a2b", "disposition": "queued", "thread_id": _TID},
        handler=lambda c, p: c.service.send(**p),
        method="send",
        positional=("thread_id", "text"),
    ),
    OpSpec(
        "thread.interrupt",
        "Ends the running turn as `turn.interrupted`; the queue then continues.",
        (_thread(), Param("clear_queue", BOOL, "also drop the queued inputs (default false)")),
        "`{thread_id, interrupted, state, ...}`; `interrupted` is false when no turn was running",
        {"thread_id": _TID, "clear_queue": False},
        {"thread_id": _TID, "interrupted": True, "state": "idle"},
        handler=lambda c, p: c.service.interrupt(**p),
        method="interrupt",
        positional=("thread_id",),
    ),
    OpSpec(
        "thread.pause",
        "Interrupts the running turn and takes no new turn until resume.",
        (_thread(),),
        "`{thread_id, interrupted, state, ...}`",
        {"thread_id": _TID},
        {"thread_id": _TID, "interrupted": True, "state": "paused"},
        handler=lambda c, p: c.service.pause(**p),
        method="pause",
        positional=("thread_id",),
    ),
    OpSpec(
        "thread.resume",
        "Resumes a paused thread (succeeds and changes nothing otherwise).",
        (_thread(),),
        "`{thread_id, resumed, state}`",
        {"thread_id": _TID},
        {"thread_id": _TID, "resumed": True, "state": "idle"},
        handler=lambda c, p: c.service.resume(**p),
        method="resume",
        positional=("thread_id",),
    ),
    OpSpec(
        "thread.kill",
        "Interrupts, then stops the thread and its descendants for good.",
        (_thread(),),
        "`{thread_id, killed: [thread ids], state}`",
        {"thread_id": _TID},
        {"thread_id": _TID, "killed": [_TID], "state": "killed"},
        handler=lambda c, p: c.service.kill(**p),
        method="kill",
        positional=("thread_id",),
    ),
    OpSpec(
        "thread.history",
        "The thread's Responses items, exactly as sent to the model (or a page of them).",
        (_thread(), *_PAGING),
        _PAGED.format(whole="list of Responses items"),
        {"thread_id": _TID},
        [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
        notes=_PAGE_NOTES,
        handler=lambda c, p: c.service.history(**p),
        method="history",
        positional=("thread_id",),
    ),
    OpSpec(
        "thread.events",
        "Stored events with `seq > since`, oldest first, at most `limit` (and at most 10,000).",
        (
            _thread(),
            Param("since", SEQ, "default 0"),
            Param("limit", COUNT, "default and maximum 10,000"),
        ),
        "list of event envelopes; a range the log no longer holds appears as one `events.gap`",
        {"thread_id": _TID, "since": 6, "limit": 1},
        [_EVENT],
        notes="A page also stops before it would exceed half the frame limit (`[tuning] "
        "max_message_bytes`), holding at least one event: read on from the last seq until a "
        "page comes back empty.",
        handler=lambda c, p: c.service.events(**p),
        method="thread_events",
        positional=("thread_id",),
    ),
    OpSpec(
        "thread.compact",
        "Compacts the thread's context now.",
        (_thread(),),
        "`{thread_id, items_before, items_after}`",
        {"thread_id": _TID},
        {"thread_id": _TID, "items_before": 40, "items_after": 3},
        background=True,
        notes="Runs in the background: requests sent after it on the same connection are "
        "answered without waiting for it, so its answer may come after theirs.",
        handler=lambda c, p: c.service.compact(**p),
        method="compact",
        positional=("thread_id",),
    ),
    OpSpec(
        "subscribe",
        "Streams a thread's events (or every thread's, with `*`), or the blackboard's changes under a prefix: replay, then live.",
        (
            Param("thread_id", THREAD_OR_ALL, "a thread id, or `*` for every thread"),
            Param("blackboard", BB_PREFIX, "instead of `thread_id`: a key prefix (`\"\"`: every key); streams `blackboard.changed`"),
            Param(
                "since",
                SEQ,
                "replay stored events (or blackboard changes) with `seq > since` first; omitted: live ones only; "
                "beyond the last seq: `bad_request`",
            ),
        ),
        "`{thread_id, since, replayed, last_seq}`; for the blackboard `{thread_id: null, blackboard, since, replayed, last_seq}`",
        {"thread_id": _TID, "since": 0},
        {"thread_id": _TID, "since": 0, "replayed": 7, "last_seq": 7},
        notes="Give exactly one of `thread_id` and `blackboard`. "
        "The answer comes after the `replayed` events it counts and before every "
        "later event: events with `seq <= last_seq` precede it, live ones follow it "
        "(`last_seq` is null for `*`). Subscribing again to the same thread (or `*`, or prefix) "
        "restarts its stream from the new `since`. Unknown thread: `not_found`. "
        "A blackboard subscription belongs to no thread: its events have `thread_id` null, "
        "`blackboard` set to the subscription's prefix and the blackboard's own `seq` (see Events).",
        handler=_subscribe,
        method="subscribe",
        positional=("thread_id", "since"),
    ),
    OpSpec(
        "unsubscribe",
        "Stops a subscription made with `subscribe`.",
        (
            Param("thread_id", THREAD_OR_ALL, "as given to `subscribe`"),
            Param("blackboard", BB_PREFIX, "instead of `thread_id`: the prefix given to `subscribe`"),
        ),
        "`{thread_id, subscribed: false}` (for the blackboard also `blackboard`)",
        {"thread_id": _TID},
        {"thread_id": _TID, "subscribed": False},
        notes="Unsubscribing a thread still covered by `*` keeps its events flowing (and vice versa).",
        handler=_unsubscribe,
        method="unsubscribe",
        positional=("thread_id",),
    ),
    OpSpec(
        "blackboard.get",
        "One blackboard entry.",
        (_key(),),
        _ENTRY_OBJECT,
        {"key": "team/plan"},
        _ENTRY,
        notes="A key that is absent (or deleted) is `not_found`.",
        handler=lambda c, p: c.blackboard.get(**p),
        method="blackboard_get",
        positional=("key",),
    ),
    OpSpec(
        "blackboard.set",
        "Writes a JSON value at a key; with `if_version`, only if the key is at that version (compare-and-set).",
        (
            _key(),
            Param(
                "value",
                JSON,
                "the value (JSON, `null` too), at most `[tuning] blackboard_max_value_bytes` (1 MiB) as JSON",
                required=True,
                nullable=True,
            ),
            _IF_VERSION,
        ),
        _ENTRY_OBJECT + " as written (`writer` null: a client)",
        {"key": "team/plan", "value": {"steps": ["parse", "test"]}, "if_version": 2},
        _ENTRY,
        notes="Each write bumps the key's version by one (versions go on across a delete). A failed "
        "compare-and-set is a `conflict` and changes nothing. A value that is not JSON (binary, a "
        "map with non-string keys, NaN) or too big is a `bad_request`.",
        handler=lambda c, p: c.blackboard.set(**p),
        method="blackboard_set",
        positional=("key", "value"),
    ),
    OpSpec(
        "blackboard.list",
        "The live entries whose key starts with a prefix, in key order (or a page of them).",
        (Param("prefix", BB_PREFIX, "default `\"\"`: every key"), *_PAGING),
        _PAGED.format(whole=f"list of {_ENTRY_OBJECT}s"),
        {"prefix": "team/"},
        [_ENTRY],
        notes=_PAGE_NOTES,
        handler=lambda c, p: c.blackboard.list(**p),
        method="blackboard_list",
        positional=("prefix",),
    ),
    OpSpec(
        "blackboard.delete",
        "Deletes a blackboard entry; with `if_version`, only if the key is at that version.",
        (_key(), _IF_VERSION),
        "the deleted entry: " + _ENTRY_OBJECT + " with `value` null, the new `version` and `deleted: true`",
        {"key": "team/plan", "if_version": 3},
        {**_ENTRY, "value": None, "version": 4, "deleted": True},
        notes="An absent (or already deleted) key is `not_found`; a failed compare-and-set is a `conflict` and changes nothing.",
        handler=lambda c, p: c.blackboard.delete(**p),
        method="blackboard_delete",
        positional=("key",),
    ),
    OpSpec(
        "thread.tree",
        "The thread tree under a thread, or under every root, with states.",
        (Param("thread_id", THREAD_ID, "the top of the tree (default: every root thread)"),),
        "list of `{thread_id, state, children: [...]}` (nested)",
        {"thread_id": _TID},
        [{"thread_id": _TID, "state": "running", "children": [{"thread_id": "thr_1111111111111111", "state": "idle", "children": []}]}],
        handler=lambda c, p: c.service.tree_all(**p),
        method="thread_tree",
        positional=("thread_id",),
    ),
    OpSpec(
        "thread.delete",
        "Deletes a thread with its descendants, history and events.",
        (_thread(),),
        "`{deleted: [thread ids]}`",
        {"thread_id": _TID},
        {"deleted": [_TID, "thr_1111111111111111"]},
        notes="Refused with `invalid_state` while the thread or a descendant runs (interrupt or kill it first). "
        "Their event streams end; their ids are not_found from then on.",
        handler=lambda c, p: c.service.delete(**p),
        method="delete_thread",
        positional=("thread_id",),
    ),
    OpSpec(
        "tool.register",
        "Offers this connection's tools to a thread's model while the connection stays open.",
        (
            _thread(),
            Param(
                "specs",
                SPECS,
                "`[{name, description, parameters (JSON schema of an object), strict?, timeout_s?}]`; a Responses API function "
                "tool (`type: \"function\"`) as it is; names are 1-64 ASCII letters, digits, `_` or `-`",
                required=True,
            ),
        ),
        "`{thread_id, registered: [names]}`",
        {"thread_id": _TID, "specs": [{"name": "lookup", "description": "Looks a word up.", "parameters": {"type": "object", "properties": {"word": {"type": "string"}}}}]},
        {"thread_id": _TID, "registered": ["lookup"]},
        notes="Each call of such a tool reaches this connection alone as a `tool.call` message (`seq` null; data "
        "`{call_id, turn_id, name, arguments}`), answered with `tool.result`. A call not answered within `timeout_s` "
        "(at most the daemon's tool timeout), or whose connection closes, gets an output saying so; closing the "
        "connection withdraws its tools. Registering again replaces this connection's tools of the same names; a name "
        "the thread has already (a built-in, or another connection's) is a `conflict`. A thread offers at most 128 "
        "remote tools from all connections together, and 256 KiB of their definitions (every model request carries "
        "them): a registration past either is a `bad_request` and registers nothing.",
        handler=lambda c, p: c.service.register_tools(peer=c, **p),
        method="register_tools",
        positional=("thread_id", "specs"),
    ),
    OpSpec(
        "tool.result",
        "Answers a `tool.call` this connection received.",
        (Param("call_id", NAME, "from the `tool.call`", required=True), Param("output", OUTPUT, "what the model reads (text)", required=True)),
        "`{call_id, accepted: true}`",
        {"call_id": "call_7", "output": "a small domesticated feline"},
        {"call_id": "call_7", "accepted": True},
        notes="A call that timed out, was answered already, or belongs to another connection is `not_found`.",
        handler=lambda c, p: c.service.tool_result(peer=c, **p),
        method="tool_result",
        positional=("call_id", "output"),
    ),
    OpSpec(
        "approval.list",
        "Tool calls waiting for approval (of one thread, or of all), oldest first.",
        (Param("thread_id", THREAD_ID, "only this thread's requests"),),
        "list of `{request_id, thread_id, turn_id, call_id, tool, arguments, summary, requested_at}`",
        {"thread_id": _TID},
        [_APPROVAL],
        handler=lambda c, p: c.service.approvals_all(**p),
        method="approvals",
    ),
    OpSpec(
        "approval.respond",
        "Answers a pending approval: the call runs (approve) or the model is told it was denied.",
        (
            Param("request_id", NAME, "from `approval.requested` or `approval.list`", required=True),
            Param("decision", STRING, "the answer", required=True, choices=("approve", "deny")),
        ),
        "`{request_id, decision, thread_id}`",
        {"request_id": _APPROVAL["request_id"], "decision": "approve"},
        {"request_id": _APPROVAL["request_id"], "decision": "approve", "thread_id": _TID},
        notes="A request answered, timed out or cancelled already is `not_found`.",
        handler=lambda c, p: c.service.respond_approval_any(**p),
        method="respond_approval",
        positional=("request_id", "decision"),
    ),
)

OPS_BY_NAME: dict[str, OpSpec] = {spec.name: spec for spec in OPS}

ERROR_CODES: dict[str, str] = {
    "unauthorized": "missing or wrong `hello` (the connection is then closed)",
    "bad_request": "malformed frame or request, unknown/missing/mistyped param or one over its limit (named in the message)",
    "unknown_op": "no such op",
    "not_found": "no such thread (or blackboard entry)",
    "conflict": "the change conflicts with the current state (e.g. a version mismatch)",
    "invalid_state": "not allowed in the thread's state (e.g. input to a killed thread)",
    "timeout": "the thread did not answer in time",
    "too_large": "the answer would exceed the frame limit; ask for it in pages (`offset`/`limit`)",
    "unavailable": "the daemon is starting or shutting down",
    "upstream_error": "the model endpoint failed a request made for this op",
    "internal": "a bug; the daemon logged it and stays up",
}
