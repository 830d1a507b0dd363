"""The mock upstream's scripting language: its data and its parsing (pure).

See the package docstring (and docs/mock-upstream.md) for the language itself; which
step answers a request is decided in ``selection``.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import orjson

STREAM_FAULTS = frozenset({"drop", "stall", "malformed"})
TERMINAL_FAULTS = frozenset({"failed", "incomplete", "error", "usage_limit"})
REFUSAL_FAULTS = frozenset({"invalid_encrypted_content"})  # an HTTP 400 as the real endpoint words it
INLINE_FAULTS = frozenset({"junk"})  # the stream goes on after them
FAULT_KINDS = STREAM_FAULTS | TERMINAL_FAULTS | INLINE_FAULTS | REFUSAL_FAULTS | {"http"}
_FAULT_FIELDS = ("status", "retry_after", "message", "code", "reason", "after_deltas", "error_type", "resets_in_seconds")
_STEP_FIELDS = frozenset(
    {"text", "deltas", "delay_ms", "repeat", "reasoning", "calls", "usage", "ttfb_ms", "rate_limits", "chunks", "fault", "times"}
    | set(_FAULT_FIELDS)
)
_USAGE_FIELDS = frozenset({"input_tokens", "cached_tokens", "output_tokens", "reasoning_tokens"})
_CONDITION_FIELDS = frozenset({"org_verified", "context_window", "compact_call"})
CHUNK_MODES = ("batch", "event")


class ScriptError(ValueError):
    """An invalid script or directive; the message says what and where."""


@dataclass(frozen=True)
class Call:
    name: str
    arguments: str  # sent verbatim, so malformed JSON can be scripted
    call_id: str | None = None
    custom: bool = False  # a freeform (custom tool) call: ``arguments`` is its raw ``input``


@dataclass(frozen=True)
class Fault:
    kind: str
    status: int = 500
    retry_after: str | None = None
    message: str | None = None
    code: str | None = None
    reason: str = "max_output_tokens"
    after_deltas: int | None = None
    error_type: str | None = None  # the error's "type" (the ChatGPT backend names plan limits by type alone)
    resets_in_seconds: int = 3600  # for usage limits


@dataclass(frozen=True)
class LimitWindow:
    used_percent: float
    window_minutes: int | None = None
    resets_in_seconds: int | None = None


@dataclass(frozen=True)
class Limits:
    """Account rate limits to report, as headers and as a ``codex.rate_limits`` event."""

    primary: LimitWindow | None = None
    secondary: LimitWindow | None = None
    credits: tuple[bool, bool, str | None] | None = None  # has_credits, unlimited, balance
    plan_type: str | None = None


@dataclass(frozen=True)
class Conditions:
    """What the simulated account and endpoint are like (checked before any step is served)."""

    org_verified: bool = True  # False: reasoning summaries are refused, as for unverified organisations
    context_window: int | None = None  # None: the catalog's window for known models, else unlimited
    compact_call: bool = True  # False: responses/compact answers 404, as on endpoints without it


@dataclass(frozen=True)
class Step:
    text: str | None = None
    deltas: int | None = None
    delay_ms: float = 0.0
    repeat: tuple[str, int] | None = None
    stamp_time: bool = False  # repeat {"stamp": "time"}: each delta is the wall-clock time it is written
    reasoning: str | None = None
    calls: tuple[Call, ...] = ()
    usage: dict[str, int] = field(default_factory=dict)
    ttfb_ms: float = 0.0
    rate_limits: Limits | None = None
    chunks: str = "batch"  # "event": every SSE event its own HTTP chunk, as real endpoints frame them
    fault: Fault | None = None
    times: int | None = None  # requests that get the fault before it is served normally; None: all

    @property
    def has_content(self) -> bool:
        return self.text is not None or self.repeat is not None or self.reasoning is not None or bool(self.calls)


@dataclass(frozen=True)
class Rule:
    match: str
    steps: tuple[Step, ...]
    conditions: Conditions = Conditions()


@dataclass(frozen=True)
class ListedModel:
    """A model the mock's ``/models`` lists beside the shipped catalog's, and what it takes."""

    name: str
    efforts: tuple[str, ...] | None = None  # None: any effort; (): the model does not reason
    default_effort: str | None = None
    context_window: int | None = None  # None: no limit
    verbosity: str | None = None
    hidden: bool = False  # the ChatGPT backend lists it with visibility "hide"


@dataclass(frozen=True)
class Script:
    rules: tuple[Rule, ...] = ()
    default: tuple[Step, ...] | None = None
    conditions: Conditions = Conditions()
    models: tuple[ListedModel, ...] = ()


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
    _expect(obj, dict, where, "an object with 'name' and 'arguments' (or 'input' for a freeform call)")
    unknown = set(obj) - {"name", "arguments", "input", "call_id"}
    if unknown:
        raise ScriptError(f"{where}: unknown call field {sorted(unknown)[0]!r}")
    if "input" in obj and "arguments" in obj:
        raise ScriptError(f"{where}: give 'arguments' (a function call) or 'input' (a freeform call), not both")
    name = _expect(obj.get("name"), str, f"{where}.name", "a string")
    call_id = obj.get("call_id")
    if call_id is not None:
        _expect(call_id, str, f"{where}.call_id", "a string")
    if "input" in obj:
        return Call(name, _expect(obj["input"], str, f"{where}.input", "a string"), call_id, custom=True)
    arguments = obj.get("arguments", {})
    if not isinstance(arguments, str):
        arguments = orjson.dumps(arguments).decode()
    return Call(name, arguments, call_id)


def _repeat(step: Step, obj: Any, where: str) -> Step:
    """``{"chunk": str, "count": int}``, or ``{"stamp": "time", "count": int}``."""
    _expect(obj, dict, where, "{'chunk': str, 'count': int} or {'stamp': 'time', 'count': int}")
    unknown = set(obj) - {"chunk", "count", "stamp"}
    if unknown:
        raise ScriptError(f"{where}: unknown field {sorted(unknown)[0]!r}")
    count = _count(obj.get("count"), f"{where}.count")
    if "stamp" in obj:
        if obj["stamp"] != "time" or "chunk" in obj:
            raise ScriptError(f"{where}: 'stamp' takes \"time\" (and no 'chunk'), got {obj['stamp']!r}")
        return replace(step, repeat=("", count), stamp_time=True)
    return replace(step, repeat=(_expect(obj.get("chunk"), str, f"{where}.chunk", "a string"), count))


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
    for name in ("message", "code", "reason", "error_type"):
        if name in params:
            fault = replace(fault, **{name: _expect(params[name], str, f"{where}.{name}", "a string")})
    for name in ("after_deltas", "resets_in_seconds"):
        if name in params:
            fault = replace(fault, **{name: _count(params[name], f"{where}.{name}")})
    return fault, (None if times is None else _count(times, f"{where}.times"))


def _limit_window(obj: Any, where: str) -> LimitWindow:
    _expect(obj, dict, where, "an object with 'used_percent'")
    unknown = set(obj) - {"used_percent", "window_minutes", "resets_in_seconds"}
    if unknown:
        raise ScriptError(f"{where}: unknown field {sorted(unknown)[0]!r}")
    used = _expect(obj.get("used_percent"), (int, float), f"{where}.used_percent", "a number")
    minutes = obj.get("window_minutes")
    resets = obj.get("resets_in_seconds")
    return LimitWindow(
        float(used),
        None if minutes is None else _count(minutes, f"{where}.window_minutes"),
        None if resets is None else _count(resets, f"{where}.resets_in_seconds"),
    )


def _limits(obj: Any, where: str) -> Limits:
    _expect(obj, dict, where, "an object with 'primary', 'secondary', 'credits', 'plan_type'")
    unknown = set(obj) - {"primary", "secondary", "credits", "plan_type"}
    if unknown:
        raise ScriptError(f"{where}: unknown field {sorted(unknown)[0]!r}")
    limits = Limits(
        primary=_limit_window(obj["primary"], f"{where}.primary") if "primary" in obj else None,
        secondary=_limit_window(obj["secondary"], f"{where}.secondary") if "secondary" in obj else None,
        plan_type=_expect(obj["plan_type"], str, f"{where}.plan_type", "a string") if "plan_type" in obj else None,
    )
    if "credits" in obj:
        credits = _expect(obj["credits"], dict, f"{where}.credits", "an object")
        flags = [credits.get(name) for name in ("has_credits", "unlimited")]
        if not all(isinstance(flag, bool) for flag in flags):
            raise ScriptError(f"{where}.credits: 'has_credits' and 'unlimited' must be true or false")
        balance = credits.get("balance")
        if balance is not None:
            _expect(balance, str, f"{where}.credits.balance", "a string")
        limits = replace(limits, credits=(flags[0], flags[1], balance))
    return limits


def parse_conditions(obj: Any, where: str, base: Conditions = Conditions()) -> Conditions:
    """An ``endpoint`` object: ``{"org_verified": false, "context_window": 4000}``."""
    if not isinstance(obj, dict):
        raise ScriptError(f"{where}: expected an object with {', '.join(sorted(_CONDITION_FIELDS))}, got {obj!r}")
    unknown = set(obj) - _CONDITION_FIELDS
    if unknown:
        raise ScriptError(f"{where}: unknown field {sorted(unknown)[0]!r}")
    conditions = base
    if "org_verified" in obj:
        if not isinstance(obj["org_verified"], bool):
            raise ScriptError(f"{where}.org_verified: expected true or false, got {obj['org_verified']!r}")
        conditions = replace(conditions, org_verified=obj["org_verified"])
    if "context_window" in obj:
        conditions = replace(conditions, context_window=_count(obj["context_window"], f"{where}.context_window"))
    if "compact_call" in obj:
        if not isinstance(obj["compact_call"], bool):
            raise ScriptError(f"{where}.compact_call: expected true or false, got {obj['compact_call']!r}")
        conditions = replace(conditions, compact_call=obj["compact_call"])
    return conditions


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
        step = _repeat(step, obj["repeat"], f"{where}.repeat")
    if "chunks" in obj:
        if obj["chunks"] not in CHUNK_MODES:
            raise ScriptError(f"{where}.chunks: expected one of {', '.join(CHUNK_MODES)}, got {obj['chunks']!r}")
        step = replace(step, chunks=obj["chunks"])
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
    if "rate_limits" in obj:
        step = replace(step, rate_limits=_limits(obj["rate_limits"], f"{where}.rate_limits"))
    fault, times = _fault(obj, where)
    return replace(step, fault=fault, times=times)


def parse_steps(obj: Any, where: str = "script") -> tuple[Step, ...]:
    """A step, a list of steps, or ``{"steps": [...]}``."""
    if isinstance(obj, dict) and set(obj) == {"steps"}:
        obj = obj["steps"]
    if isinstance(obj, list):
        return tuple(parse_step(s, f"{where}.steps[{i}]") for i, s in enumerate(obj))
    return (parse_step(obj, where),)


def parse_directive(obj: Any, where: str, base: Conditions = Conditions()) -> tuple[tuple[Step, ...], Conditions]:
    """A step, a list of steps, or ``{"steps": [...], "endpoint": {...}}``; ``endpoint`` may
    also sit beside the fields of a single step. Without any step the reply is the echo."""
    if not (isinstance(obj, dict) and ("endpoint" in obj or set(obj) == {"steps"})):
        return parse_steps(obj, where), base
    rest = {k: v for k, v in obj.items() if k != "endpoint"}
    conditions = parse_conditions(obj["endpoint"], f"{where}.endpoint", base) if "endpoint" in obj else base
    if "steps" in rest:
        if len(rest) > 1:
            raise ScriptError(f"{where}: 'steps' cannot be mixed with step fields ({sorted(set(rest) - {'steps'})[0]!r})")
        return parse_steps(rest["steps"], where), conditions
    return (parse_step(rest, where) if rest else Step(),), conditions


def _listed_model(obj: Any, where: str) -> ListedModel:
    """``"gpt-6.9-test"`` or ``{"id", "efforts"?, "default_effort"?, "context_window"?, "verbosity"?, "hidden"?}``."""
    if isinstance(obj, str) and obj:
        return ListedModel(obj)
    _expect(obj, dict, where, "a model name or an object with 'id'")
    unknown = set(obj) - {"id", "efforts", "default_effort", "context_window", "verbosity", "hidden"}
    if unknown:
        raise ScriptError(f"{where}: unknown field {sorted(unknown)[0]!r}")
    model = ListedModel(_expect(obj.get("id"), str, f"{where}.id", "a model name"))
    if "efforts" in obj:
        efforts = _expect(obj["efforts"], list, f"{where}.efforts", "a list of efforts")
        model = replace(model, efforts=tuple(_expect(e, str, f"{where}.efforts", "an effort") for e in efforts))
    for name in ("default_effort", "verbosity"):
        if name in obj:
            model = replace(model, **{name: _expect(obj[name], str, f"{where}.{name}", "a string")})
    if "context_window" in obj:
        model = replace(model, context_window=_count(obj["context_window"], f"{where}.context_window"))
    if "hidden" in obj:
        if not isinstance(obj["hidden"], bool):
            raise ScriptError(f"{where}.hidden: expected true or false, got {obj['hidden']!r}")
        model = replace(model, hidden=obj["hidden"])
    return model


def parse_script(doc: Any, where: str = "script") -> Script:
    _expect(doc, dict, where, "an object with 'rules', 'default', 'endpoint' and/or 'models'")
    unknown = set(doc) - {"rules", "default", "endpoint", "models"}
    if unknown:
        raise ScriptError(f"{where}: unknown field {sorted(unknown)[0]!r}")
    conditions = parse_conditions(doc["endpoint"], f"{where}.endpoint") if "endpoint" in doc else Conditions()
    rules = []
    for i, rule in enumerate(_expect(doc.get("rules", []), list, f"{where}.rules", "a list")):
        at = f"{where}.rules[{i}]"
        _expect(rule, dict, at, "an object with 'match' and 'steps'")
        unknown = set(rule) - {"match", "steps", "endpoint"}
        if unknown:
            raise ScriptError(f"{at}: unknown field {sorted(unknown)[0]!r}")
        match = _expect(rule.get("match"), str, f"{at}.match", "a string")
        rule_conditions = parse_conditions(rule["endpoint"], f"{at}.endpoint", conditions) if "endpoint" in rule else conditions
        rules.append(Rule(match, parse_steps(rule.get("steps", []), at), rule_conditions))
    default = doc.get("default")
    listed = _expect(doc.get("models", []), list, f"{where}.models", "a list of models")
    models = tuple(_listed_model(entry, f"{where}.models[{i}]") for i, entry in enumerate(listed))
    return Script(tuple(rules), None if default is None else parse_steps(default, f"{where}.default"), conditions, models)


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


