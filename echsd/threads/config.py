"""Thread configuration: validation on create, and hot-swap edits.

Config is read by the turn loop at every model request, so a change made while a turn runs
takes effect at its next request. Empty ``instructions`` (the default) mean the model's base
prompt from the catalog; either keeps the ``{{cwd}}`` placeholder, filled in when a request
is built, so changing ``cwd`` updates the prompt too. A config is
checked against ``ConfigRules``: the tools that exist, and the model catalog (each model
accepts its own reasoning efforts; a model change carries the effort over only if the new
model accepts it, else the new model's default is taken and reported as changed).

The sandbox keys (``sandbox``, ``network``, ``writable_roots``) take the daemon's defaults
(``config.toml``) on create, and ``network`` defaults by mode (off but under full-access);
a change of ``sandbox`` alone takes ``network`` along to the new mode's default, unless the
thread's network was not its old mode's (someone chose it). A policy this daemon cannot
enforce is refused on create and configure (``SandboxRules``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Collection, Iterable, Mapping, Protocol

from echsd.approval_rules import ApprovalRules, Prefix, parse_rules
from echsd.errors import BadRequest
from echsd.sandbox_modes import FULL_ACCESS, MODES, NETWORK, WORKSPACE_WRITE

# The default that threads created before the base prompts were stored: read as "" (the model's base prompt).
LEGACY_INSTRUCTIONS = (
    "You are a coding agent running on the user's machine in {{cwd}}. "
    "Use the tools to inspect and change files and to run commands; prefer small, verifiable "
    "steps, and report concisely what you did and what remains."
)
WRITES = ("allow", "dry-run", "deny")  # what apply_patch may do to files
APPROVALS = ("never", "on-request", "on-write", "always")  # which tool calls wait for a client's approval (approval_rules.py)
CONFIG_KEYS = (
    "cwd", "model", "reasoning", "instructions", "tools", "writes", "approval", "steps", "chain", "mcp",
    "sandbox", "network", "writable_roots", "approval_allow", "approval_deny", "project_docs",
)  # fmt: skip
MAX_STEPS = 100  # turns an autonomous run may take
MAX_WRITABLE_ROOTS = 64


@dataclass(frozen=True)
class ThreadConfig:
    cwd: str
    model: str
    reasoning: str
    instructions: str
    tools: tuple[str, ...]
    writes: str = "allow"
    approval: str = "never"
    steps: int = 1  # > 1: every input starts an autonomous run of up to this many turns
    chain: bool = False  # send previous_response_id and only new items (the endpoint stores responses)
    mcp: tuple[str, ...] | None = None  # MCP servers whose tools are offered; None: every enabled one
    sandbox: str = WORKSPACE_WRITE  # what the thread's commands and file tools may touch (tools/sandbox)
    network: str = "off"  # whether its commands may use the network
    writable_roots: tuple[str, ...] = ()  # writable under workspace-write, besides the cwd and TMPDIR
    approval_allow: tuple[Prefix, ...] = ()  # command prefixes run without asking (besides [approval] allow)
    approval_deny: tuple[Prefix, ...] = ()  # command prefixes refused without asking (besides [approval] deny)
    project_docs: bool = True  # send the AGENTS.md files of the cwd's repository (and [tuning] project_docs)

    def to_dict(self) -> dict[str, Any]:
        data = {key: getattr(self, key) for key in CONFIG_KEYS}  # not asdict(): it deep-copies (per turn end)
        data["tools"] = list(self.tools)
        data["mcp"] = list(self.mcp) if self.mcp is not None else None
        data["writable_roots"] = list(self.writable_roots)
        data["approval_allow"] = [list(rule) for rule in self.approval_allow]
        data["approval_deny"] = [list(rule) for rule in self.approval_deny]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ThreadConfig":
        """From a stored row (keys added later take their defaults in older rows)."""
        known = {key: data[key] for key in CONFIG_KEYS if key in data}
        known["tools"] = tuple(known.get("tools", ()))
        if known.get("mcp") is not None:
            known["mcp"] = tuple(known["mcp"])
        known["writable_roots"] = tuple(known.get("writable_roots", ()))
        for key in ("approval_allow", "approval_deny"):
            known[key] = tuple(tuple(rule) for rule in known.get(key, ()))
        if known.get("instructions") == LEGACY_INSTRUCTIONS:
            known["instructions"] = ""
        return cls(**known)

    @property
    def approval_rules(self) -> ApprovalRules:
        """The thread's own rules: its allow rules cover its escalations too."""
        return ApprovalRules(self.approval_allow, self.approval_deny, escalate=self.approval_allow)

    def rendered_instructions(self, base_prompt: str = "") -> str:
        """The thread's instructions, or (empty) its model's base prompt, with ``{{cwd}}`` filled in."""
        return (self.instructions if self.instructions.strip() else base_prompt).replace("{{cwd}}", self.cwd)


def _check_cwd(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise BadRequest("cwd must be a non-empty path")
    try:
        path = Path(value).expanduser()
    except RuntimeError:  # ~user with no such user
        raise BadRequest(f"cwd {value!r}: no such user, or no home directory") from None
    if not path.is_absolute():
        raise BadRequest(f"cwd must be an absolute path (got {value!r})")
    try:
        is_dir = path.is_dir()
    except (OSError, ValueError) as exc:  # a name too long, a NUL byte, ...
        raise BadRequest(f"cwd {value!r} cannot be used: {exc}") from None
    if not is_dir:
        raise BadRequest(f"cwd {value!r} is not an existing directory")
    return str(path)


def _check_text(key: str, value: Any, *, allow_empty: bool = False) -> str:
    if not isinstance(value, str) or (not allow_empty and not value.strip()):
        raise BadRequest(f"{key} must be a non-empty string")
    return value


def _tool_items(spec: Any, key: str = "tools") -> list[str]:
    if isinstance(spec, str):
        return [part.strip() for part in spec.split(",") if part.strip()]
    if isinstance(spec, (list, tuple)) and all(isinstance(item, str) for item in spec):
        return [item.strip() for item in spec if item.strip()]
    raise BadRequest(f"{key} must be a list of names or a string like '+name,-name'")


def apply_tools_spec(current: Iterable[str], spec: Any, known: Iterable[str], key: str = "tools") -> tuple[str, ...]:
    """``spec`` replaces the list (plain names) or edits it (``+name`` adds, ``-name`` removes).

    Mixing plain names with edits is refused: it is ambiguous which one the caller meant.
    ``key`` names the setting in errors (``tools``, or ``mcp`` for MCP servers).
    """
    known_set = set(known)
    items = _tool_items(spec, key)
    edits = [item for item in items if item[0] in "+-"]
    if edits and len(edits) != len(items):
        raise BadRequest(f"{key}: use either a list of names or +name/-name edits, not both")
    names = [item.lstrip("+-") for item in items]
    unknown = sorted(name for name in names if name not in known_set)
    if unknown:
        if key == "tools":
            raise BadRequest(f"unknown tool(s): {', '.join(unknown)}; known tools: {', '.join(sorted(known_set))}")
        listed = ", ".join(sorted(known_set)) or "none (add [mcp_servers.NAME] tables to config.toml)"
        raise BadRequest(f"unknown MCP server(s): {', '.join(unknown)}; configured: {listed}")
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
    "instructions": lambda value: _check_text("instructions", value, allow_empty=True),
    "writes": _choice("writes", WRITES),
    "approval": _choice("approval", APPROVALS),
    "steps": lambda value: _check_steps(value),
    "chain": lambda value: _check_bool("chain", value),
    "sandbox": _choice("sandbox", MODES),
    "network": lambda value: _check_network(value),
    "writable_roots": lambda value: _check_roots(value),
    "approval_allow": lambda value: _check_rules("approval_allow", value),
    "approval_deny": lambda value: _check_rules("approval_deny", value),
    "project_docs": lambda value: _check_bool("project_docs", value),
}


def _check_rules(key: str, value: Any) -> tuple[Prefix, ...]:
    if isinstance(value, str):  # "git status, pytest -q": one command prefix per comma
        value = [part for part in value.split(",") if part.strip()]
    try:
        return parse_rules(value, key)
    except ValueError as exc:
        raise BadRequest(str(exc)) from None


def _check_network(value: Any) -> str:
    if isinstance(value, bool):  # network=true reads as well as network=on
        return "on" if value else "off"
    return _choice("network", NETWORK)(value)


def _check_roots(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [part for part in value.split(",") if part.strip()]
    if not isinstance(value, (list, tuple)) or not all(isinstance(item, str) for item in value):
        raise BadRequest("writable_roots must be a list of absolute paths")
    if len(value) > MAX_WRITABLE_ROOTS:
        raise BadRequest(f"writable_roots: at most {MAX_WRITABLE_ROOTS} paths")
    roots = []
    for item in value:
        path = os.path.expanduser(item.strip())
        if not os.path.isabs(path) or "\x00" in path:
            raise BadRequest(f"writable_roots: {item!r} is not an absolute path")
        roots.append(os.path.normpath(path))
    return tuple(dict.fromkeys(roots))


@dataclass(frozen=True)
class SandboxRules:
    """The daemon's sandbox defaults for new threads, and what it cannot enforce."""

    mode: str = WORKSPACE_WRITE
    network: str | None = None  # None: off, but on under full-access
    writable_roots: tuple[str, ...] = ()
    unenforceable: Callable[[str, bool], list[str]] = lambda mode, network: []  # (mode, network on) -> why not

    def default_network(self, mode: Any) -> str:
        return self.network or ("on" if mode == FULL_ACCESS else "off")

    def defaults(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """The sandbox keys ``given`` leaves out."""
        mode = given.get("sandbox") or self.mode
        defaults: dict[str, Any] = {"sandbox": self.mode, "writable_roots": self.writable_roots}
        defaults["network"] = self.default_network(mode)
        return {key: value for key, value in defaults.items() if given.get(key) is None}

    def network_follows(self, config: "ThreadConfig", changes: Mapping[str, Any]) -> Mapping[str, Any]:
        """``changes`` with the new mode's default network when they change ``sandbox`` alone
        and the thread's network is its current mode's default (``sandbox=full-access`` then
        means no sandbox at all, as on create)."""
        mode = changes.get("sandbox")
        if mode is None or mode == config.sandbox or changes.get("network") is not None:
            return changes
        if config.network != self.default_network(config.sandbox):
            return changes
        return {**changes, "network": self.default_network(mode)}

    def check(self, config: "ThreadConfig") -> None:
        reasons = self.unenforceable(config.sandbox, config.network == "on")
        if reasons:
            raise BadRequest(f"sandbox {config.sandbox} with network {config.network} cannot be enforced here: " + "; ".join(reasons))


def _check_bool(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise BadRequest(f"{key} must be true or false (got {value!r})")
    return value


def _check_steps(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_STEPS:
        raise BadRequest(f"steps must be an integer from 1 to {MAX_STEPS} (got {value!r})")
    return value


class EffortCatalog(Protocol):
    """The model catalog, as config checking needs it (``echsd.codex.ModelCatalog``)."""

    def validate_effort(self, model: str, effort: Any) -> str: ...

    def default_effort(self, model: str) -> str: ...


@dataclass(frozen=True)
class ConfigRules:
    known_tools: Collection[str]
    catalog: EffortCatalog
    stores_responses: bool = True  # False: the endpoint refuses store: true (the ChatGPT backend), so no chain
    mcp_servers: Collection[str] = ()  # configured in config.toml
    mcp_enabled: Collection[str] = ()  # of those, the enabled ones: what ``mcp`` None means
    sandbox: SandboxRules = SandboxRules()


CHAIN_REFUSED = (
    "chain=true needs an endpoint that stores responses, and the ChatGPT backend (provider codex) "
    "does not (it answers 'Store must be set to false'): use chain=false"
)


def _apply(config: ThreadConfig, changes: Mapping[str, Any], rules: ConfigRules) -> ThreadConfig:
    updated = config
    for key, value in changes.items():
        if key == "tools":
            updated = replace(updated, tools=apply_tools_spec(updated.tools, value, rules.known_tools))
        elif key == "mcp":
            current = updated.mcp if updated.mcp is not None else tuple(rules.mcp_enabled)
            updated = replace(updated, mcp=apply_tools_spec(current, value, rules.mcp_servers, key="mcp"))
        elif key != "reasoning":
            updated = replace(updated, **{key: _CHECKS[key](value)})
    if changes.get("chain") is True and not rules.stores_responses:
        raise BadRequest(CHAIN_REFUSED)
    if "reasoning" in changes:
        return replace(updated, reasoning=rules.catalog.validate_effort(updated.model, changes["reasoning"]))
    try:
        rules.catalog.validate_effort(updated.model, updated.reasoning)
    except BadRequest:  # the effort came along from another model: take this one's default
        return replace(updated, reasoning=rules.catalog.default_effort(updated.model))
    return updated


def new_config(params: Mapping[str, Any], *, default_model: str, default_tools: Iterable[str], rules: ConfigRules) -> ThreadConfig:
    """Config for a new thread from ``thread.create`` params (missing keys take defaults)."""
    model = _check_text("model", params["model"]) if params.get("model") is not None else default_model
    defaults = ThreadConfig(
        cwd=os.getcwd(), model=model, reasoning=rules.catalog.default_effort(model), instructions="", tools=tuple(default_tools)
    )
    given = {key: params[key] for key in CONFIG_KEYS if params.get(key) is not None}
    given = {**rules.sandbox.defaults(given), **given}
    config = _apply(defaults, given, rules)
    rules.sandbox.check(config)
    return config


def reconfigure(config: ThreadConfig, changes: Any, rules: ConfigRules) -> tuple[ThreadConfig, list[str]]:
    """Apply a ``thread.configure`` change set; returns the new config and the keys that changed."""
    if not isinstance(changes, Mapping) or not changes:
        raise BadRequest("config must be a non-empty map of " + ", ".join(CONFIG_KEYS))
    unknown = sorted(map(str, set(changes) - set(CONFIG_KEYS)))
    if unknown:
        raise BadRequest(f"unknown config key(s): {', '.join(unknown)}; allowed: {', '.join(CONFIG_KEYS)}")
    updated = _apply(config, rules.sandbox.network_follows(config, changes), rules)
    changed = [key for key in CONFIG_KEYS if getattr(updated, key) != getattr(config, key)]
    if {"sandbox", "network"} & set(changed):
        rules.sandbox.check(updated)
    return updated, changed
