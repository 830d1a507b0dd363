"""Which step answers a request (pure): read the request's ``input``, find the script.

Selection is stateless: it is derived from ``input`` alone, so any client, restarted or
not, gets the same answer for the same history. Only the *last* user message can script
the reply (its ``mock:`` line, or the script file's rules matching its text); the step
served is the number of model response rounds after it. So a later plain message gets the
plain reply, never the rest (or the ``done``) of an older script, and a malformed
directive fails only the requests it is the last user message of.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, replace
from typing import Any, Iterable

import orjson

from echsd.codex.mock.script import Conditions, Script, ScriptError, Step, parse_directive

_MODEL_OUTPUT_TYPES = frozenset({"reasoning", "function_call", "custom_tool_call", "local_shell_call", "web_search_call"})
_COMPACTION_PREFIX = "mockcmp:"
DONE_TEXT = "done"
SESSION_PLACEHOLDER = "$SESSION_ID"  # in a call's arguments: the last exec session the input names
_SESSION = re.compile(r"session ID (\d+)")


@dataclass(frozen=True)
class Selection:
    step: Step
    fault_key: tuple[str, int] | None  # (script source, step index) for counting ``times``
    conditions: Conditions = Conditions()


def is_user_message(item: Any) -> bool:
    return isinstance(item, dict) and item.get("role") == "user" and item.get("type", "message") == "message"


def is_model_output(item: dict) -> bool:
    kind = item.get("type", "message")
    if kind == "message":
        return item.get("role") == "assistant"
    return kind in _MODEL_OUTPUT_TYPES


def message_text(item: dict) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def input_items(value: Any) -> list[Any]:
    """The request's ``input`` as a list (a bare string is one user message)."""
    if isinstance(value, str):
        return [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": value}]}]
    return value if isinstance(value, list) else []


def encode_compaction(segments: list[int], summary: str) -> str:
    payload = orjson.dumps({"segments": segments, "summary": summary})
    return _COMPACTION_PREFIX + base64.b64encode(payload).decode()


def compaction_segments(item: dict) -> list[int] | None:
    """The rounds a mock compaction item folded away (per user message), else None."""
    content = item.get("encrypted_content")
    if item.get("type") != "compaction" or not isinstance(content, str) or not content.startswith(_COMPACTION_PREFIX):
        return None
    try:
        segments = orjson.loads(base64.b64decode(content[len(_COMPACTION_PREFIX) :]))["segments"]
    except (ValueError, KeyError, TypeError):
        return None
    return [n for n in segments if isinstance(n, int)] if isinstance(segments, list) else None


def segment_rounds(items: Iterable[Any]) -> list[int]:
    """For each user message, the model response rounds between it and the next one.

    A round is a maximal run of model output items (assistant message, reasoning,
    function call...). A mock compaction item adds back the rounds it folded away,
    aligned with the user messages it kept.
    """
    segments: list[int] = []
    in_run = False
    for item in items:
        if not isinstance(item, dict):
            in_run = False
        elif is_user_message(item):
            segments.append(0)
            in_run = False
        elif (folded := compaction_segments(item)) is not None:
            for back in range(1, min(len(folded), len(segments)) + 1):
                segments[-back] += folded[-back]
            in_run = False
        elif is_model_output(item):
            if not in_run and segments:
                segments[-1] += 1
            in_run = True
        else:
            in_run = False
    return segments


def _directive(text: str, where: str) -> tuple[str, tuple[Step, ...], Conditions] | None:
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("mock:"):
            raw = stripped[len("mock:") :].strip()
            try:
                doc = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                raise ScriptError(f"{where}: the 'mock:' line is not valid JSON ({exc})") from None
            steps, conditions = parse_directive(doc, where)
            return raw, steps, conditions
    return None


def echo_text(users: list[str]) -> str:
    return "mock reply to: " + (users[-1][:200] if users else "")


def _steps_for(script: Script | None, users: list[str]) -> tuple[str, tuple[Step, ...] | None, Conditions]:
    """(source, steps, conditions) for the last user message: its own directive, else the
    first matching rule of the script, else its default."""
    text = users[-1] if users else ""
    found = _directive(text, f"mock directive in user message {len(users)}")
    if found is not None:
        return "inline:" + found[0], found[1], found[2]
    if script is None:
        return "", None, Conditions()
    for index, rule in enumerate(script.rules):
        if rule.match in text:
            return f"rule:{index}", rule.steps, rule.conditions
    return "default", script.default, script.conditions


def with_session_id(step: Step, items: list[Any]) -> Step:
    """``step`` with ``"$SESSION_ID"`` in its calls' arguments replaced by the number of the last
    exec session a tool output of ``items`` names ("Process running with session ID 123"),
    so a script can drive a session whose id it cannot know in advance."""
    if not any(SESSION_PLACEHOLDER in call.arguments for call in step.calls):
        return step
    outputs = [item["output"] for item in items if isinstance(item, dict) and isinstance(item.get("output"), str)]
    found = [number for output in outputs for number in _SESSION.findall(output)]
    if not found:
        return step
    calls = tuple(
        replace(call, arguments=call.arguments.replace(f'"{SESSION_PLACEHOLDER}"', found[-1]).replace(SESSION_PLACEHOLDER, found[-1]))
        for call in step.calls
    )
    return replace(step, calls=calls)


def select(script: Script | None, items: list[Any]) -> Selection:
    """The step that answers a request with this ``input`` (and the endpoint's conditions)."""
    users = [message_text(item) for item in items if is_user_message(item)]
    source, steps, conditions = _steps_for(script, users)
    if steps is None:
        return Selection(Step(text=echo_text(users)), None, conditions)
    round_index = sum(segment_rounds(items)[-1:])
    if round_index >= len(steps):
        return Selection(Step(text=DONE_TEXT), None, conditions)
    step = with_session_id(steps[round_index], items)
    if not step.has_content:
        step = replace(step, text=echo_text(users))
    return Selection(step, (source, round_index), conditions)
