"""What the blackboard accepts and how its entries look from outside, as pure functions.

Keys are non-empty strings of at most ``MAX_KEY_BYTES`` UTF-8 bytes without control
characters (PostgreSQL text cannot hold NUL, and a key is meant to be read by people and
models); values are JSON, at most ``[tuning] blackboard_max_value_bytes`` as JSON text.
The wire layer checks keys with the same ``key_problem`` (``echsd.wire.params``), so a bad
key is refused with the same words whoever sends it. Imported by the thin client: nothing
here loads the daemon.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

import orjson

from echsd.events import BlackboardChanged
from echsd.errors import BadRequest

if TYPE_CHECKING:
    from echsd.store.rows import BlackboardChange, BlackboardRow

MAX_KEY_BYTES = 512
DEFAULT_MAX_VALUE_BYTES = 1024 * 1024
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def key_problem(key: Any, *, empty: bool = False) -> str | None:
    """What is wrong with ``key`` as a blackboard key (``empty``: as a prefix, which may be
    ""), worded to follow "... is"; None when it is fine."""
    if not isinstance(key, str):
        return f"not a string ({type(key).__name__})"
    if not key and not empty:
        return "empty"
    try:
        size = len(key.encode("utf-8"))
    except UnicodeEncodeError:
        return "not valid text (it holds a lone surrogate)"
    if size > MAX_KEY_BYTES:
        return f"{size:,} bytes long; the limit is {MAX_KEY_BYTES} bytes"
    if _CONTROL.search(key):
        return "holding control characters"
    return None


def check_key(key: Any, *, what: str = "key") -> str:
    problem = key_problem(key, empty=what == "prefix")
    if problem is not None:
        raise BadRequest(f"blackboard {what} is {problem}")
    return str(key)


def stored_value(value: Any, max_bytes: int) -> Any:
    """``value`` as the blackboard keeps it: a fresh copy decoded from its JSON text (so a
    caller changing its object later changes nothing here), or ``BadRequest`` saying why
    it cannot be kept."""
    try:
        text = orjson.dumps(value)
    except TypeError as exc:  # orjson.JSONEncodeError included
        reason = str(exc)
        if reason == "Dict key must be str":
            reason = "a map key is not a string"
        raise BadRequest(f"value is not JSON: {reason}") from None
    if len(text) > max_bytes:
        raise BadRequest(f"value is {len(text):,} bytes as JSON; the limit is {max_bytes:,} bytes ([tuning] blackboard_max_value_bytes)")
    if b"null" in text and _has_non_finite(value):  # orjson writes NaN and infinities as null
        raise BadRequest("value is not JSON: it holds NaN or an infinity")
    return orjson.loads(text)


def _has_non_finite(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return False


def entry_object(entry: BlackboardRow) -> dict[str, Any]:
    """An entry as clients and tools see it (CONTRACT.md 1.2); ``deleted`` only on a tombstone."""
    shown: dict[str, Any] = {
        "key": entry.key,
        "value": entry.value,
        "version": entry.version,
        "writer": entry.writer,
        "updated_at": entry.updated_at,
    }
    if entry.deleted:
        shown["deleted"] = True
    return shown


def change_envelope(change: BlackboardChange, prefix: str) -> dict[str, Any]:
    """The ``blackboard.changed`` event of one change, for a subscription to ``prefix``.

    It belongs to no thread (``thread_id`` null); ``blackboard`` names the subscription
    and ``seq`` is the blackboard's own seq space.
    """
    entry = change.entry
    return {
        "event": BlackboardChanged.type_name,
        "thread_id": None,
        "blackboard": prefix,
        "seq": change.seq,
        "ts": entry.updated_at,
        "data": {
            "key": entry.key,
            "value": entry.value,
            "version": entry.version,
            "writer": entry.writer,
            "updated_at": entry.updated_at,
            "deleted": entry.deleted,
        },
    }
