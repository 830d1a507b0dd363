"""Example values and shared wording the protocol reference shows (``docs/protocol.md``);
tests send the examples."""

from __future__ import annotations

from echsd.wire.params import MAX_PAGE

THE_THREAD = "the thread"
PAGE_OFFSET = "page: skip this many (default 0)"
PAGE_LIMIT = f"page: at most this many (default and maximum {MAX_PAGE:,})"
TID = "thr_0123456789abcdef"
CHILD = "thr_1111111111111111"
CONFIG = {
    "cwd": "/home/me/project",
    "model": "gpt-5.1",
    "reasoning": "medium",
    "instructions": "You are a coding agent ...",
    "tools": ["exec_command", "read_file", "apply_patch"],
}
THREAD = {
    "thread_id": TID,
    "name": None,
    "state": "idle",
    "parent": None,
    "children": [],
    "config": CONFIG,
    "queued": 0,
    "usage": {"turns": 1, "input_tokens": 1200, "cached_tokens": 0, "output_tokens": 80, "reasoning_tokens": 0},
    "created_at": 1767225600.0,
    "active_turn": None,
    "last_turn": {"turn_id": "turn_5f0c2a9d11e24b7a", "status": "completed", "reason": None, "final_text": "Done: the tests pass."},
    "last_seq": 7,
    "node": "build-1",
    "waiting_on": None,
}
THREAD_OBJECT = "thread object (CONTRACT.md 2.5)"
ENTRY_OBJECT = "entry object `{key, value, version, writer, updated_at}`"
ENTRY = {"key": "team/plan", "value": {"steps": ["parse", "test"]}, "version": 3, "writer": TID, "updated_at": 1767225602.0}
APPROVAL = {
    "request_id": "apr_0a1b2c3d4e5f6071",
    "thread_id": TID,
    "turn_id": "turn_5f0c2a9d11e24b7a",
    "call_id": "call_7",
    "tool": "exec_command",
    "arguments": {"cmd": "rm -rf build"},
    "summary": "rm -rf build",
    "requested_at": 1767225601.5,
}
LISTED_APPROVAL = {**APPROVAL, "arguments_truncated": False}
EVENT = {
    "event": "turn.delta",
    "thread_id": TID,
    "seq": 7,
    "ts": 1767225601.25,
    "data": {"turn_id": "turn_5f0c2a9d11e24b7a", "item_id": "msg_1", "delta": "Hel"},
}
PAGED = (
    "without `offset` and `limit`: {whole}; with either: one page "
    "`{{items, offset, next_offset, total}}` (`next_offset` null after the last page)"
)
PAGE_NOTES = (
    "A page also stops before it would exceed half the frame limit (`[tuning] max_message_bytes`), "
    "holding at least one item; read on from `next_offset`. An answer without paging that "
    "would exceed the frame limit is refused with `too_large`."
)
