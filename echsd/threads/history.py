"""A thread's Responses history: item builders and invariants (sans-IO).

Items are stored exactly as they are sent back to the model: model output items arrive
already in their input shape (``echsd.codex.reducer.as_input_item`` drops server-side ids
and statuses), everything else (reasoning ``encrypted_content`` included) is kept verbatim.

Invariant (CONTRACT.md 2.4): every ``function_call`` is followed by exactly one
``function_call_output`` with its ``call_id`` before the next model request. ``repair``
produces the outputs that restore it after an interrupt, an error or a crash.
"""

from __future__ import annotations

from typing import Any, Iterable

CALL_TYPES = ("function_call", "custom_tool_call", "local_shell_call")
OUTPUT_TYPES = {"function_call": "function_call_output", "custom_tool_call": "custom_tool_call_output", "local_shell_call": "function_call_output"}


def user_message(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


INTERRUPTED_MARK = " [interrupted]"


def interrupted_reply(text: str) -> dict[str, Any]:
    """What the model had said of a reply when its turn was interrupted, marked as cut off."""
    return {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text + INTERRUPTED_MARK}]}


def function_call_output(call_id: str, output: str | list[dict[str, Any]], call_type: str = "function_call") -> dict[str, Any]:
    return {"type": OUTPUT_TYPES.get(call_type, "function_call_output"), "call_id": call_id, "output": output}


def dangling_calls(items: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Calls with no output yet, in order."""
    open_calls: dict[str, dict[str, Any]] = {}
    for item in items:
        kind = item.get("type")
        if kind in CALL_TYPES and item.get("call_id"):
            open_calls[item["call_id"]] = item
        elif isinstance(kind, str) and kind.endswith("_output") and item.get("call_id") in open_calls:
            del open_calls[item["call_id"]]
    return list(open_calls.values())


def repair(items: Iterable[dict[str, Any]], reason: str) -> list[dict[str, Any]]:
    """Output items for every dangling call, saying why it has no real result."""
    return [
        function_call_output(call["call_id"], f"aborted: {reason}", call.get("type", "function_call"))
        for call in dangling_calls(items)
    ]


def message_text(item: dict[str, Any]) -> str:
    parts = item.get("content") or []
    if isinstance(parts, str):
        return parts
    return "".join(part.get("text", "") for part in parts if isinstance(part, dict))


def last_assistant_text(items: Iterable[dict[str, Any]]) -> str:
    text = ""
    for item in items:
        if item.get("type") == "message" and item.get("role") == "assistant":
            text = message_text(item)
    return text


def check_invariants(items: list[dict[str, Any]]) -> list[str]:
    """Problems with the call/output pairing (empty when the history is sound)."""
    problems = []
    seen_calls: dict[str, int] = {}
    outputs: dict[str, int] = {}
    for item in items:
        kind = item.get("type")
        if kind in CALL_TYPES:
            call_id = item.get("call_id")
            if call_id in seen_calls:
                problems.append(f"duplicate call_id {call_id}")
            seen_calls[call_id] = 0
        elif isinstance(kind, str) and kind.endswith("_output"):
            call_id = item.get("call_id")
            if call_id not in seen_calls:
                problems.append(f"output for unknown call {call_id}")
            outputs[call_id] = outputs.get(call_id, 0) + 1
    for call_id in seen_calls:
        count = outputs.get(call_id, 0)
        if count != 1:
            problems.append(f"call {call_id} has {count} outputs")
    return problems
