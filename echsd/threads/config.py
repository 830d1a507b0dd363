"""Thread configuration: validation on create, and hot-swap edits.

Config is read by the turn loop at every model request, so a change made while a turn runs
takes effect at its next request. ``instructions`` keep the ``{{cwd}}`` placeholder; it is
filled in when a request is built, so changing ``cwd`` updates the prompt too.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Iterable, Mapping

from echsd.errors import BadRequest
from echsd.settings import REASONING_EFFORTS

DEFAULT_INSTRUCTIONS = (
    "You are a coding agent running on the user's machine in {{cwd}}. "
    "Use the tools to inspect and change files and to run commands; prefer small, verifiable "
    "steps, and report concisely what you did and what remains."
)
DEFAULT_REASONING = "medium"
CONFIG_KEYS = ("cwd", "model", "reasoning", "instructions", "tools")


@dataclass(frozen=True)
class ThreadConfig:
    cwd: str
    model: str
    reasoning: str
    instructions: str
    tools: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["tools"] = list(self.tools)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ThreadConfig":
        return cls(
            cwd=data["cwd"],
            model=data["model"],
            reasoning=data["reasoning"],
            instructions=data["instructions"],
            tools=tuple(data["tools"]),
        )

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


def new_config(params: Mapping[str, Any], *, default_model: str, default_tools: Iterable[str], known_tools: Iterable[str]) -> ThreadConfig:
    """Config for a new thread from ``thread.create`` params (missing keys take defaults)."""
    default_tools = tuple(default_tools)
    config = ThreadConfig(
        cwd=_check_cwd(params["cwd"]) if params.get("cwd") is not None else os.getcwd(),
        model=_check_text("model", params["model"]) if params.get("model") is not None else default_model,
        reasoning=_check_reasoning(params["reasoning"]) if params.get("reasoning") is not None else DEFAULT_REASONING,
        instructions=(
            _check_text("instructions", params["instructions"], allow_empty=True)
            if params.get("instructions") is not None
            else DEFAULT_INSTRUCTIONS
        ),
        tools=default_tools,
    )
    if params.get("tools") is not None:
        config = replace(config, tools=apply_tools_spec(default_tools, params["tools"], known_tools))
    return config


def reconfigure(config: ThreadConfig, changes: Any, known_tools: Iterable[str]) -> tuple[ThreadConfig, list[str]]:
    """Apply a ``thread.configure`` change set; returns the new config and the keys that changed."""
    if not isinstance(changes, Mapping) or not changes:
        raise BadRequest("config must be a non-empty map of " + ", ".join(CONFIG_KEYS))
    unknown = sorted(set(changes) - set(CONFIG_KEYS))
    if unknown:
        raise BadRequest(f"unknown config key(s): {', '.join(map(str, unknown))}; allowed: {', '.join(CONFIG_KEYS)}")
    updated = config
    for key, value in changes.items():
        if key == "cwd":
            updated = replace(updated, cwd=_check_cwd(value))
        elif key == "model":
            updated = replace(updated, model=_check_text("model", value))
        elif key == "reasoning":
            updated = replace(updated, reasoning=_check_reasoning(value))
        elif key == "instructions":
            updated = replace(updated, instructions=_check_text("instructions", value, allow_empty=True))
        elif key == "tools":
            updated = replace(updated, tools=apply_tools_spec(updated.tools, value, known_tools))
    changed = [key for key in CONFIG_KEYS if getattr(updated, key) != getattr(config, key)]
    return updated, changed

