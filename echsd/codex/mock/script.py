"""The mock upstream's scripting language: parsing and step selection (pure).

See the package docstring (and docs/mock-upstream.md) for the language itself. Selection
is stateless: which step answers a request is derived from the request's ``input`` alone
(the number of model response rounds after the scripting user message), so any client,
restarted or not, gets the same answer for the same history.
"""

from __future__ import annotations

import base64
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable

import orjson

STREAM_FAULTS = frozenset({"drop", "stall", "malformed"})
TERMINAL_FAULTS = frozenset({"failed", "incomplete", "error"})
FAULT_KINDS = STREAM_FAULTS | TERMINAL_FAULTS | {"http"}
_FAULT_FIELDS = ("status", "retry_after", "message", "code", "reason", "after_deltas")
_STEP_FIELDS = frozenset(
    {"text", "deltas", "delay_ms", "repeat", "reasoning", "calls", "usage", "ttfb_ms", "fault", "times", *_FAULT_FIELDS}
)
_USAGE_FIELDS = frozenset({"input_tokens", "cached_tokens", "output_tokens", "reasoning_tokens"})
_MODEL_OUTPUT_TYPES = frozenset({"reasoning", "function_call", "custom_tool_call", "local_shell_call", "web_search_call"})
_COMPACTION_PREFIX = "mockcmp:"
DONE_TEXT = "done"


class ScriptError(ValueError):
    """An invalid script or directive; the message says what and where."""


@dataclass(frozen=True)
class Call:
    name: str
    arguments: str  # sent verbatim, so malformed JSON can be scripted
    call_id: str | None = None


@dataclass(frozen=True)
class Fault:
    kind: str
    status: int = 500
    retry_after: str | None = None
    message: str | None = None
    code: str | None = None
    reason: str = "max_output_tokens"
    after_deltas: int | None = None


@dataclass(frozen=True)
class Step:
    text: str | None = None
    deltas: int | None = None
    delay_ms: float = 0.0
    repeat: tuple[str, int] | None = None
    reasoning: str | None = None
    calls: tuple[Call, ...] = ()
    usage: dict[str, int] = field(default_factory=dict)
    ttfb_ms: float = 0.0
    fault: Fault | None = None
    times: int | None = None  # requests that get the fault before it is served normally; None: all

    @property
    def has_content(self) -> bool:
        return self.text is not None or self.repeat is not None or self.reasoning is not None or bool(self.calls)


@dataclass(frozen=True)
class Rule:
    match: str
    steps: tuple[Step, ...]


@dataclass(frozen=True)
class Script:
    rules: tuple[Rule, ...] = ()
    default: tuple[Step, ...] | None = None


@dataclass(frozen=True)
class Selection:
    step: Step
    fault_key: tuple[str, int] | None  # (script source, step index) for counting ``times``


# ---------------------------------------------------------------- parsing


def _expect(value: Any, types: type | tuple[type, ...], where: str, what: str) -> Any:
    if isinstance(value, bool) or not isinstance(value, types):  # no field of the language is a boolean
        raise ScriptError(f"{where}: expected {what}, got {value!r}")
    return value


def _count(value: Any, where: str) -> int:
    _expect(value, int, where, "a non-negative integer")
    if value < 0:
        raise ScriptError(f"{where}: expected a non-negative integer, got {value!r}")
    return value


def _millis(value: Any, where: str) -> float:
    _expect(value, (int, float), where, "a number of milliseconds")
    if value < 0:
        raise ScriptError(f"{where}: expected a non-negative number, got {value!r}")
    return float(value)


def _call(obj: Any, where: str) -> Call:
    _expect(obj, dict, where, "an object with 'name' and 'arguments'")
    unknown = set(obj) - {"name", "arguments", "call_id"}
    if unknown:
        raise ScriptError(f"{where}: unknown call field {sorted(unknown)[0]!r}")
    name = _expect(obj.get("name"), str, f"{where}.name", "a string")
    arguments = obj.get("arguments", {})
    if not isinstance(arguments, str):
        arguments = orjson.dumps(arguments).decode()
    call_id = obj.get("call_id")
    if call_id is not None:
        _expect(call_id, str, f"{where}.call_id", "a string")
    return Call(name, arguments, call_id)


def _fault(obj: dict, where: str) -> tuple[Fault | None, int | None]:
    raw = obj.get("fault")
    times = obj.get("times")
    params = {k: obj[k] for k in _FAULT_FIELDS if k in obj}
    if raw is None:
        stray = sorted({*params, *(["times"] if times is not None else [])})
        if stray:
            raise ScriptError(f"{where}: {stray[0]!r} needs a 'fault'")
        return None, None
    if isinstance(raw, dict):
        extra = dict(raw)
        kind = extra.pop("type", None) or extra.pop("kind", None)
        times = extra.pop("times", times)
        unknown = set(extra) - set(_FAULT_FIELDS)
        if unknown:
            raise ScriptError(f"{where}.fault: unknown field {sorted(unknown)[0]!r}")
        params.update(extra)
    else:
        kind = raw
    if kind not in FAULT_KINDS:
        raise ScriptError(f"{where}.fault: expected one of {', '.join(sorted(FAULT_KINDS))}, got {kind!r}")
    fault = Fault(kind=kind)
    if "status" in params:
        fault = replace(fault, status=_count(params["status"], f"{where}.status"))
    if "retry_after" in params:
        value = _expect(params["retry_after"], (int, float, str), f"{where}.retry_after", "seconds or an HTTP date")
        fault = replace(fault, retry_after=str(value))
    for name in ("message", "code", "reason"):
        if name in params:
            fault = replace(fault, **{name: _expect(params[name], str, f"{where}.{name}", "a string")})
    if "after_deltas" in params:
        fault = replace(fault, after_deltas=_count(params["after_deltas"], f"{where}.after_deltas"))
    return fault, (None if times is None else _count(times, f"{where}.times"))


def parse_step(obj: Any, where: str = "step") -> Step:
    _expect(obj, dict, where, "a step object")
    unknown = set(obj) - _STEP_FIELDS
    if unknown:
        raise ScriptError(f"{where}: unknown step field {sorted(unknown)[0]!r}")
    step = Step()
    if "text" in obj:
        step = replace(step, text=_expect(obj["text"], str, f"{where}.text", "a string"))
    if "deltas" in obj:
        step = replace(step, deltas=max(1, _count(obj["deltas"], f"{where}.deltas")))
    if "delay_ms" in obj:
        step = replace(step, delay_ms=_millis(obj["delay_ms"], f"{where}.delay_ms"))
    if "ttfb_ms" in obj:
        step = replace(step, ttfb_ms=_millis(obj["ttfb_ms"], f"{where}.ttfb_ms"))
    if "repeat" in obj:
        repeat = _expect(obj["repeat"], dict, f"{where}.repeat", "{'chunk': str, 'count': int}")
        chunk = _expect(repeat.get("chunk"), str, f"{where}.repeat.chunk", "a string")
        step = replace(step, repeat=(chunk, _count(repeat.get("count"), f"{where}.repeat.count")))
    if "reasoning" in obj:
        step = replace(step, reasoning=_expect(obj["reasoning"], str, f"{where}.reasoning", "a string"))
    if "calls" in obj:
        calls = _expect(obj["calls"], list, f"{where}.calls", "a list of calls")
        step = replace(step, calls=tuple(_call(c, f"{where}.calls[{i}]") for i, c in enumerate(calls)))
    if "usage" in obj:
        usage = _expect(obj["usage"], dict, f"{where}.usage", "an object")
        for key, value in usage.items():
            if key not in _USAGE_FIELDS:
                raise ScriptError(f"{where}.usage: unknown field {key!r}")
            _count(value, f"{where}.usage.{key}")
        step = replace(step, usage=dict(usage))
    fault, times = _fault(obj, where)
    return replace(step, fault=fault, times=times)


def parse_steps(obj: Any, where: str = "script") -> tuple[Step, ...]:
    """A step, a list of steps, or ``{"steps": [...]}``."""
    if isinstance(obj, dict) and set(obj) == {"steps"}:
        obj = obj["steps"]
    if isinstance(obj, list):
        return tuple(parse_step(s, f"{where}.steps[{i}]") for i, s in enumerate(obj))
    return (parse_step(obj, where),)


def parse_script(doc: Any, where: str = "script") -> Script:
    _expect(doc, dict, where, "an object with 'rules' and/or 'default'")
    unknown = set(doc) - {"rules", "default"}
    if unknown:
        raise ScriptError(f"{where}: unknown field {sorted(unknown)[0]!r}")
    rules = []
    for i, rule in enumerate(_expect(doc.get("rules", []), list, f"{where}.rules", "a list")):
        _expect(rule, dict, f"{where}.rules[{i}]", "an object with 'match' and 'steps'")
        match = _expect(rule.get("match"), str, f"{where}.rules[{i}].match", "a string")
        rules.append(Rule(match, parse_steps(rule.get("steps", []), f"{where}.rules[{i}]")))
    default = doc.get("default")
    return Script(tuple(rules), None if default is None else parse_steps(default, f"{where}.default"))


def load_script(path: str | Path) -> Script:
    """A script file, JSON or (``.toml``) TOML."""
    path = Path(path)
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise ScriptError(f"cannot read script {path}: {exc.strerror}") from None
    try:
        doc = tomllib.loads(text.decode()) if path.suffix == ".toml" else orjson.loads(text)
    except (tomllib.TOMLDecodeError, orjson.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ScriptError(f"invalid script {path}: {exc}") from None
    return parse_script(doc, str(path))


# ---------------------------------------------------------------- reading the request input


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


def _directive(text: str, where: str) -> tuple[str, tuple[Step, ...]] | None:
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("mock:"):
            raw = stripped[len("mock:") :].strip()
            try:
                doc = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                raise ScriptError(f"{where}: the 'mock:' line is not valid JSON ({exc})") from None
            return raw, parse_steps(doc, where)
    return None


def echo_text(users: list[str]) -> str:
    return "mock reply to: " + (users[-1][:200] if users else "")


def _steps_for(script: Script | None, users: list[str]) -> tuple[str, tuple[Step, ...] | None, int]:
    """(source, steps, index of the user message whose following rounds pick the step)."""
    for ordinal in range(len(users) - 1, -1, -1):
        found = _directive(users[ordinal], f"mock directive in user message {ordinal + 1}")
        if found is not None:
            return "inline:" + found[0], found[1], ordinal
    last = len(users) - 1
    if script is None:
        return "", None, last
    text = users[-1] if users else ""
    for index, rule in enumerate(script.rules):
        if rule.match in text:
            return f"rule:{index}", rule.steps, last
    return "default", script.default, last


def select(script: Script | None, items: list[Any]) -> Selection:
    """The step that answers a request with this ``input``."""
    users = [message_text(item) for item in items if is_user_message(item)]
    source, steps, ordinal = _steps_for(script, users)
    if steps is None:
        return Selection(Step(text=echo_text(users)), None)
    round_index = sum(segment_rounds(items)[ordinal:]) if ordinal >= 0 else 0
    if round_index >= len(steps):
        return Selection(Step(text=DONE_TEXT), None)
    step = steps[round_index]
    if not step.has_content:
        step = replace(step, text=echo_text(users))
    return Selection(step, (source, round_index))
