"""The wire's other operations: the handshake, status, subscriptions, the blackboard, remote
tools and approvals (CONTRACT.md 3.2), one class each, like the thread operations."""

from __future__ import annotations

from typing import Any

from echsd.errors import BadRequest
import echsd.ops.examples as ex
from echsd.ops.base import EVERYWHERE, Op, OwnerOf, Route, Where, local, op, param
from echsd.paging import page_of
from echsd.wire.codec import PROTOCOL_VERSION
from echsd.wire.params import (
    BB_KEY,
    BB_PREFIX,
    BOOL,
    COUNT,
    JSON,
    NAME,
    OFFSET,
    OUTPUT,
    PAGE_SIZE,
    SEQ,
    SPECS,
    STRING,
    THREAD_ID,
    THREAD_OR_ALL,
    TOKEN,
)

THE_THREAD, PAGE_OFFSET, PAGE_LIMIT = ex.THE_THREAD, ex.PAGE_OFFSET, ex.PAGE_LIMIT
KEY = "the blackboard key (no control characters)"
IF_VERSION = "only if the key is at this version now; `0`: only if it is absent (create only)"


@op(
    "hello",
    Where.CONNECTION,
    result="`protocol`, `version` (daemon version), `server`, `connection` (this connection's id)",
    example={"protocol": 1, "token": "<token>"},
    example_result={"protocol": 1, "version": "0.1.0", "server": "echsd", "connection": 7},
    notes="Anything else as the first request, a wrong token or an unsupported protocol "
    "is answered with `unauthorized` and the connection is closed. A second `hello` on an "
    "authenticated connection is a `bad_request`.",
)
class Hello(Op):
    """Authenticates the connection; must be the first request."""

    protocol: int = param(COUNT, f"protocol version, {PROTOCOL_VERSION}", required=True, choices=(PROTOCOL_VERSION,))
    token: str = param(TOKEN, "the client token (`echsd token`)", required=True)


@op(
    "status",
    Where.HERE,
    result="status object (CONTRACT.md 2.5)",
    method="status",
    example={},
    example_result={
        "version": "0.1.0",
        "provider": "openai",
        "model": "gpt-5.1",
        "uptime_s": 42.5,
        "threads": {"total": 2, "idle": 1, "running": 1, "paused": 0, "killed": 0},
        "node": "build-1",
        "nodes": [{"node_id": "build-1", "alive": True, "lease_expires_in_s": 8.2, "threads": 2}],
    },
)
class Status(Op):
    """Daemon version, uptime, provider, model and thread counts."""


def subscription_of(thread_id: str | None, prefix: str | None) -> tuple[str | None, str | None]:
    """(thread_id, blackboard prefix) of ``subscribe``/``unsubscribe``: exactly one given."""
    if (thread_id is None) == (prefix is None):
        raise BadRequest("give exactly one of 'thread_id' and 'blackboard'")
    return thread_id, prefix


@op(
    "subscribe",
    Where.CONNECTION,
    result="`{thread_id, since, replayed, last_seq}`; for the blackboard `{thread_id: null, blackboard, since, replayed, last_seq}`",
    method="subscribe",
    positional=("thread_id", "since"),
    example={"thread_id": ex.TID, "since": 0},
    example_result={"thread_id": ex.TID, "since": 0, "replayed": 7, "last_seq": 7},
    notes="Give exactly one of `thread_id` and `blackboard`. "
    "The answer comes after the `replayed` events it counts and before every "
    "later event: events with `seq <= last_seq` precede it, live ones follow it "
    "(`last_seq` is null for `*`). Subscribing again to the same thread (or `*`, or prefix) "
    "restarts its stream from the new `since`. Unknown thread: `not_found`. "
    "A blackboard subscription belongs to no thread: its events have `thread_id` null, "
    "`blackboard` set to the subscription's prefix and the blackboard's own `seq` (see Events).",
)
class Subscribe(Op):
    """Streams a thread's events (or every thread's, with `*`), or the blackboard's changes under a prefix: replay, then live."""

    thread_id: str | None = param(THREAD_OR_ALL, "a thread id, or `*` for every thread")
    blackboard: str | None = param(BB_PREFIX, "instead of `thread_id`: a key prefix (`\"\"`: every key); streams `blackboard.changed`")
    since: int | None = param(
        SEQ,
        "replay stored events (or blackboard changes) with `seq > since` first; omitted: live ones only; "
        "beyond the last seq: `bad_request`",
    )


@op(
    "unsubscribe",
    Where.CONNECTION,
    result="`{thread_id, subscribed: false}` (for the blackboard also `blackboard`)",
    method="unsubscribe",
    positional=("thread_id",),
    example={"thread_id": ex.TID},
    example_result={"thread_id": ex.TID, "subscribed": False},
    notes="Unsubscribing a thread still covered by `*` keeps its events flowing (and vice versa).",
)
class Unsubscribe(Op):
    """Stops a subscription made with `subscribe`."""

    thread_id: str | None = param(THREAD_OR_ALL, "as given to `subscribe`")
    blackboard: str | None = param(BB_PREFIX, "instead of `thread_id`: the prefix given to `subscribe`")


@op(
    "blackboard.get",
    Where.HERE,
    result=ex.ENTRY_OBJECT,
    method="blackboard_get",
    positional=("key",),
    example={"key": "team/plan"},
    example_result=ex.ENTRY,
    notes="A key that is absent (or deleted) is `not_found`.",
)
class BoardGet(Op):
    """One blackboard entry."""

    key: str = param(BB_KEY, KEY, required=True)


@op(
    "blackboard.set",
    Where.HERE,
    result=ex.ENTRY_OBJECT + " as written (`writer` null: a client)",
    method="blackboard_set",
    positional=("key", "value"),
    example={"key": "team/plan", "value": {"steps": ["parse", "test"]}, "if_version": 2},
    example_result=ex.ENTRY,
    notes="Each write bumps the key's version by one (versions go on across a delete). A failed "
    "compare-and-set is a `conflict` and changes nothing. A value that is not JSON (binary, a "
    "map with non-string keys, NaN) or too big is a `bad_request`.",
)
class BoardSet(Op):
    """Writes a JSON value at a key; with `if_version`, only if the key is at that version (compare-and-set)."""

    key: str = param(BB_KEY, KEY, required=True)
    value: Any = param(
        JSON, "the value (JSON, `null` too), at most `[tuning] blackboard_max_value_bytes` (1 MiB) as JSON", required=True, nullable=True
    )
    if_version: int | None = param(SEQ, IF_VERSION)


@op(
    "blackboard.list",
    Where.HERE,
    result=ex.PAGED.format(whole=f"list of {ex.ENTRY_OBJECT}s"),
    method="blackboard_list",
    positional=("prefix",),
    example={"prefix": "team/"},
    example_result=[ex.ENTRY],
    notes=ex.PAGE_NOTES,
)
class BoardList(Op):
    """The live entries whose key starts with a prefix, in key order (or a page of them)."""

    prefix: str | None = param(BB_PREFIX, "default `\"\"`: every key")
    offset: int | None = param(OFFSET, PAGE_OFFSET)
    limit: int | None = param(PAGE_SIZE, PAGE_LIMIT)


@op(
    "blackboard.delete",
    Where.HERE,
    result="the deleted entry: " + ex.ENTRY_OBJECT + " with `value` null, the new `version` and `deleted: true`",
    method="blackboard_delete",
    positional=("key",),
    example={"key": "team/plan", "if_version": 3},
    example_result={**ex.ENTRY, "value": None, "version": 4, "deleted": True},
    notes="An absent (or already deleted) key is `not_found`; a failed compare-and-set is a `conflict` and changes nothing.",
)
class BoardDelete(Op):
    """Deletes a blackboard entry; with `if_version`, only if the key is at that version."""

    key: str = param(BB_KEY, KEY, required=True)
    if_version: int | None = param(SEQ, IF_VERSION)


@op(
    "tool.register",
    Where.OWNER,
    result="`{thread_id, registered: [names]}`",
    method="register_tools",
    positional=("thread_id", "specs"),
    example={
        "thread_id": ex.TID,
        "specs": [{"name": "lookup", "description": "Looks a word up.", "parameters": {"type": "object", "properties": {"word": {"type": "string"}}}}],
    },
    example_result={"thread_id": ex.TID, "registered": ["lookup"]},
    notes="Each call of such a tool reaches this connection alone as a `tool.call` message (`seq` null; data "
    "`{call_id, turn_id, name, arguments}`), answered with `tool.result`. A call not answered within `timeout_s` "
    "(at most the daemon's tool timeout), or whose connection closes, gets an output saying so; closing the "
    "connection withdraws its tools. Registering again replaces this connection's tools of the same names; a name "
    "the thread has already (a built-in, or another connection's) is a `conflict`. A thread offers at most 128 "
    "remote tools from all connections together, and 256 KiB of their definitions (every model request carries "
    "them): a registration past either is a `bad_request` and registers nothing. Several daemons: register on "
    "the node that runs the thread (`node` of the thread object).",
)
class RegisterTools(Op):
    """Offers this connection's tools to a thread's model while the connection stays open."""

    thread_id: str = param(THREAD_ID, THE_THREAD, required=True)
    specs: list[Any] = param(
        SPECS,
        "`[{name, description, parameters (JSON schema of an object), strict?, timeout_s?}]`; a Responses API function "
        "tool (`type: \"function\"`) as it is; names are 1-64 ASCII letters, digits, `_` or `-`",
        required=True,
    )
    peer: Any = local()  # the connection: calls come back on it


@op(
    "tool.result",
    Where.HERE,
    result="`{call_id, accepted: true}`",
    method="tool_result",
    positional=("call_id", "output"),
    example={"call_id": "call_7", "output": "a small domesticated feline"},
    example_result={"call_id": "call_7", "accepted": True},
    notes="A call that timed out, was answered already, or belongs to another connection is `not_found`.",
)
class ToolResult(Op):
    """Answers a `tool.call` this connection received."""

    call_id: str = param(NAME, "from the `tool.call`", required=True)
    output: str = param(OUTPUT, "what the model reads (text)", required=True)
    peer: Any = local()


@op(
    "approval.list",
    Where.EVERY,
    result=ex.PAGED.format(
        whole="list of `{request_id, thread_id, turn_id, call_id, tool, arguments, summary, rule, requested_at, arguments_truncated}` "
        "(`rule`: what approving for the thread would allow, or null)"
    ),
    method="approvals",
    example={"thread_id": ex.TID},
    example_result=[ex.LISTED_APPROVAL],
    notes="Each node holds its own threads' requests: with `thread_id`, the node that runs it answers. "
    "A list shows each request's `arguments` and `summary` cut short (a string past 2,000 characters, "
    "a map or array past 64 entries, about 16 KiB in all; `arguments_truncated` says whether anything "
    "was cut): `approval.get` gives a request whole. " + ex.PAGE_NOTES,
)
class ListApprovals(Op):
    """Tool calls waiting for approval (of one thread, or of all), oldest first."""

    thread_id: str | None = param(THREAD_ID, "only this thread's requests")
    offset: int | None = param(OFFSET, PAGE_OFFSET)
    limit: int | None = param(PAGE_SIZE, PAGE_LIMIT)

    def route(self) -> Route:
        return OwnerOf(self.thread_id) if self.thread_id is not None else EVERYWHERE

    def merge(self, parts: list[Any], page_bytes: int) -> Any:
        """Every node's requests (each node answers all of its own), oldest first, paged."""
        return self.page(sorted((approval for part in parts for approval in part), key=lambda approval: approval.get("requested_at", 0)), page_bytes)

    def page(self, listed: list[dict[str, Any]], page_bytes: int) -> Any:
        """The whole list, or the page asked for (``offset``/``limit``)."""
        if self.offset is None and self.limit is None:
            return listed
        return page_of(listed, self.offset, self.limit, page_bytes, lambda approval: approval)


@op(
    "approval.get",
    Where.ANY,
    result="`{request_id, thread_id, turn_id, call_id, tool, arguments, summary, requested_at}`, arguments and summary whole",
    method="approval",
    positional=("request_id",),
    example={"request_id": ex.APPROVAL["request_id"]},
    example_result=ex.APPROVAL,
    notes="A request answered, timed out or cancelled already is `not_found`.",
)
class GetApproval(Op):
    """One pending approval, its arguments whole (a list cuts them short)."""

    request_id: str = param(NAME, "from `approval.requested` or `approval.list`", required=True)


@op(
    "approval.respond",
    Where.ANY,
    result="`{request_id, decision, thread_id}` (with `always`: also `always` and the `rule` added)",
    method="respond_approval",
    positional=("request_id", "decision"),
    example={"request_id": ex.APPROVAL["request_id"], "decision": "approve"},
    example_result={"request_id": ex.APPROVAL["request_id"], "decision": "approve", "thread_id": ex.TID},
    notes="A request answered, timed out or cancelled already is `not_found`.",
)
class RespondApproval(Op):
    """Answers a pending approval: the call runs (approve) or the model is told it was denied."""

    request_id: str = param(NAME, "from `approval.requested` or `approval.list`", required=True)
    decision: str = param(STRING, "the answer", required=True, choices=("approve", "deny"))
    always: bool | None = param(BOOL, "with approve: approve for this thread (the request's `rule` joins the thread's `approval_allow`)")
