"""Thread configuration: validation on create, and hot-swap edits.

Config is read by the turn loop at every model request, so a change made while a turn runs
takes effect at its next request. ``instructions`` keep the ``{{cwd}}`` placeholder; it is
filled in when a request is built, so changing ``cwd`` updates the prompt too.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from echsd.errors import BadRequest
from echsd.settings import REASONING_EFFORTS

DEFAULT_INSTRUCTIONS = (
    "You are a coding agent running on the user's machine in {{cwd}}. "
    "Use the tools to inspect and change files and to run commands; prefer small, verifiable "
    "steps, and report concisely what you did and what remains."
)
DEFAULT_REASONING = "medium"
WRITES = ("allow", "dry-run", "deny")  # what apply_patch may do to files
APPROVALS = ("never", "on-write", "always")  # which tool calls wait for a client's approval
CONFIG_KEYS = ("cwd", "model", "reasoning", "instructions", "tools", "writes", "approval")


@dataclass(frozen=True)
class ThreadConfig:
    cwd: str
    model: str
    reasoning: str
    instructions: str
    tools: tuple[str, ...]
    writes: str = "allow"
    approval: str = "never"

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["tools"] = list(self.tools)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ThreadConfig":
        """From a stored row (keys added later take their defaults in older rows)."""
        known = {key: data[key] for key in CONFIG_KEYS if key in data}
        known["tools"] = tuple(known.get("tools", ()))
        return cls(**known)

    def rendered_instructions(self) -> str:
        return self.instructions.replace("{{cwd}}", self.cwd)


def _check_cwd(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise BadRequest("cwd must be a non-empty path")
    path = Path(value).expanduser()
    if not path.is_absolute():
        raise BadRequest(f"cwd must be an absolute path (got {value!r})")
    if not path.is_dir():
        raise BadRequest(f"cwd {value!r} is not an existing directory")
    return str(path)


def _check_text(key: str, value: Any, *, allow_empty: bool = False) -> str:
    if not isinstance(value, str) or (not allow_empty and not value.strip()):
        raise BadRequest(f"{key} must be a non-empty string")
    return value


def _check_reasoning(value: Any) -> str:
    if value not in REASONING_EFFORTS:
        raise BadRequest(f"reasoning must be one of {', '.join(REASONING_EFFORTS)} (got {value!r})")
    return str(value)


def _tool_items(spec: Any) -> list[str]:
    if isinstance(spec, str):
        return [part.strip() for part in spec.split(",") if part.strip()]
    if isinstance(spec, (list, tuple)) and all(isinstance(item, str) for item in spec):
        return [item.strip() for item in spec if item.strip()]
    raise BadRequest("tools must be a list of names or a string like '+name,-name'")


def apply_tools_spec(current: Iterable[str], spec: Any, known: Iterable[str]) -> tuple[str, ...]:
    """``spec`` replaces the list (plain names) or edits it (``+name`` adds, ``-name`` removes).

    Mixing plain names with edits is refused: it is ambiguous which one the caller meant.
    """
    known_set = set(known)
    items = _tool_items(spec)
    edits = [item for item in items if item[0] in "+-"]
    if edits and len(edits) != len(items):
        raise BadRequest("tools: use either a list of names or +name/-name edits, not both")
    names = [item.lstrip("+-") for item in items]
    unknown = sorted(name for name in names if name not in known_set)
    if unknown:
        raise BadRequest(f"unknown tool(s): {', '.join(unknown)}; known tools: {', '.join(sorted(known_set))}")
    if not edits:
        return tuple(dict.fromkeys(names))
    result = list(current)
    for item in items:
        name = item[1:]
        if item[0] == "+" and name not in result:
            result.append(name)
        elif item[0] == "-" and name in result:
            result.remove(name)
    return tuple(result)


def _choice(key: str, allowed: tuple[str, ...]) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if value not in allowed:
            raise BadRequest(f"{key} must be one of {', '.join(allowed)} (got {value!r})")
        return str(value)

    return check


_CHECKS: dict[str, Callable[[Any], Any]] = {
    "cwd": _check_cwd,
    "model": lambda value: _check_text("model", value),
    "reasoning": _check_reasoning,
    "instructions": lambda value: _check_text("instructions", value, allow_empty=True),
    "writes": _choice("writes", WRITES),
    "approval": _choice("approval", APPROVALS),
}


def _apply(config: ThreadConfig, changes: Mapping[str, Any], known_tools: Iterable[str]) -> ThreadConfig:
    updated = config
    for key, value in changes.items():
        if key == "tools":
            updated = replace(updated, tools=apply_tools_spec(updated.tools, value, known_tools))
        else:
            updated = replace(updated, **{key: _CHECKS[key](value)})
    return updated


def new_config(params: Mapping[str, Any], *, default_model: str, default_tools: Iterable[str], known_tools: Iterable[str]) -> ThreadConfig:
    """Config for a new thread from ``thread.create`` params (missing keys take defaults)."""
    defaults = ThreadConfig(cwd=os.getcwd(), model=default_model, reasoning=DEFAULT_REASONING, instructions=DEFAULT_INSTRUCTIONS, tools=tuple(default_tools))
    given = {key: params[key] for key in CONFIG_KEYS if params.get(key) is not None}
    return _apply(defaults, given, known_tools)


def reconfigure(config: ThreadConfig, changes: Any, known_tools: Iterable[str]) -> tuple[ThreadConfig, list[str]]:
    """Apply a ``thread.configure`` change set; returns the new config and the keys that changed."""
    if not isinstance(changes, Mapping) or not changes:
        raise BadRequest("config must be a non-empty map of " + ", ".join(CONFIG_KEYS))
    unknown = sorted(map(str, set(changes) - set(CONFIG_KEYS)))
    if unknown:
        raise BadRequest(f"unknown config key(s): {', '.join(unknown)}; allowed: {', '.join(CONFIG_KEYS)}")
    updated = _apply(config, changes, known_tools)
    changed = [key for key in CONFIG_KEYS if getattr(updated, key) != getattr(config, key)]
    return updated, changed
