"""The blackboard tools: ``blackboard_write``, ``blackboard_read``, ``blackboard_wait``.

They check arguments and hand over to the thread's ``BlackboardApi`` (``ctx.caps.blackboard``),
which writes in the thread's name; answers are JSON the model reads. A refused write (a
failed compare-and-set, a bad key or value) is the call's output, starting with its code.
``blackboard_wait`` is woken by the change itself, honours its timeout, and ends with the
turn when the turn is interrupted.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from echsd.errors import EchsError
from echsd.tools.base import ToolContext, ToolError, ToolResult, ToolSpec
from echsd.tools.capabilities import BlackboardApi

MAX_WAIT_MS = 3_600_000
MAX_LISTED = 200  # entries one read or wait shows the model

_KEY = {"type": "string", "description": "The key, e.g. `team/findings/auth`. Keys are shared by every agent."}
_PREFIX = {"type": "string", "description": "Every key starting with this (`team/`)."}


def _board(ctx: ToolContext) -> BlackboardApi:
    if ctx.caps.blackboard is None:
        raise ToolError("this thread has no blackboard here")
    return ctx.caps.blackboard


def _version(args: dict[str, Any], name: str) -> int | None:
    """An optional version argument (its type is checked against the spec already)."""
    value = args.get(name)
    if value is not None and value < 0:
        raise ToolError(f"{name} must be >= 0")
    return value


@contextmanager
def _refusals() -> Iterator[None]:
    """The blackboard's refusals (conflict, a bad key or value) as the call's output."""
    try:
        yield
    except EchsError as exc:
        raise ToolError(f"{exc.code}: {exc.message}") from None


def _one_of_key_and_prefix(args: dict[str, Any]) -> tuple[str | None, str | None]:
    key, prefix = args.get("key"), args.get("prefix")
    if key is not None and prefix is not None:
        raise ToolError("give key or prefix, not both")
    return key, prefix


def _answer(value: Any) -> ToolResult:
    return ToolResult(json.dumps(value, ensure_ascii=False))


def _listed(entries: list[dict[str, Any]], name: str) -> dict[str, Any]:
    shown: dict[str, Any] = {name: entries[:MAX_LISTED]}
    if len(entries) > MAX_LISTED:
        shown["more"] = len(entries) - MAX_LISTED
    return shown


class BlackboardWrite:
    spec = ToolSpec(
        "blackboard_write",
        "Write a JSON value to the shared blackboard, where every agent of the team (and the user) can read it. "
        "Each write bumps the key's version. With `if_version`, the write happens only if the key is at that "
        "version now (0: only if the key does not exist yet), else it fails with `conflict` and changes nothing: "
        "read, then write with the version you read, to update without losing another agent's write. "
        "`notify_parent: true` also tells your parent agent that you wrote this key.",
        {
            "type": "object",
            "properties": {
                "key": _KEY,
                "value": {"description": "Any JSON value."},
                "if_version": {"type": "integer", "description": "Write only if the key is at this version (0: create only)."},
                "notify_parent": {"type": "boolean", "description": "Tell your parent agent about this write."},
            },
            "required": ["key", "value"],
            "additionalProperties": False,
        },
    )

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        notify = bool(args.get("notify_parent"))
        with _refusals():
            written = await _board(ctx).write(args["key"], args["value"], if_version=_version(args, "if_version"), notify_parent=notify)
        return _answer(written)


class BlackboardRead:
    spec = ToolSpec(
        "blackboard_read",
        "Read the shared blackboard: one entry by `key`, or every entry whose key starts with `prefix` "
        "(neither: all of them). Each entry has its key, value, version, writer (an agent id, or null "
        "for the user) and updated_at.",
        {
            "type": "object",
            "properties": {"key": _KEY, "prefix": _PREFIX},
            "additionalProperties": False,
        },
    )

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        key, prefix = _one_of_key_and_prefix(args)
        with _refusals():
            entries = await _board(ctx).read(key=key, prefix=prefix)
        if key is not None:
            return _answer({"entry": entries[0] if entries else None})
        return _answer(_listed(entries, "entries"))


class BlackboardWait:
    spec = ToolSpec(
        "blackboard_wait",
        "Wait until a blackboard entry changes: the entry `key`, or any entry under `prefix` (neither: any "
        "entry). With `after_version`, returns at once the entries already above that version, else waits "
        "for one; without it, waits for the next change. Deleted entries come back with deleted: true. "
        "At most `timeout_ms`; on a timeout returns changed: [] and timed_out: true.",
        {
            "type": "object",
            "properties": {
                "key": _KEY,
                "prefix": _PREFIX,
                "after_version": {"type": "integer", "description": "Return entries whose version is above this."},
                "timeout_ms": {"type": "integer"},
            },
            "additionalProperties": False,
        },
    )

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        key, prefix = _one_of_key_and_prefix(args)
        after_version = _version(args, "after_version")
        timeout_ms = args.get("timeout_ms")
        if timeout_ms is not None and not 0 <= timeout_ms <= MAX_WAIT_MS:
            raise ToolError(f"timeout_ms must be between 0 and {MAX_WAIT_MS}")
        limit_s = ctx.timeout_s if timeout_ms is None else min(timeout_ms / 1000, ctx.timeout_s)
        with _refusals():
            changed = await _board(ctx).wait(key=key, prefix=prefix, after_version=after_version, timeout_s=limit_s)
        return _answer({**_listed(changed, "changed"), "timed_out": not changed})


BLACKBOARD_TOOLS = (BlackboardWrite(), BlackboardRead(), BlackboardWait())
