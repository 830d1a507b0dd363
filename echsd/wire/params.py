"""The kinds of wire params and their limits: what a value may be, and how big.

``echsd.wire.schema`` builds every op from these ``Param``s. A kind checks a value's
shape (``check``) and then its limits (``limit``, which says what is wrong and names the
limit), so a bad value is a ``bad_request`` that says why, never a value that breaks the
layer below (a path the OS refuses, a seq SQLite cannot hold, a config the actor chokes
on). Nesting is bounded for every param (``MAX_DEPTH``). Like ``schema``, this module is
imported by the thin client and loads nothing of the daemon.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable

from echsd.blackboard.entries import MAX_KEY_BYTES, key_problem
from echsd.errors import BadRequest


class ParamsError(BadRequest):
    """Params do not match the op's schema; the message names the field (a ``bad_request``
    at every door: the wire, the app-server, a tool)."""


# Limits of what a request may carry (each named in the error that enforces it). A
# request is at most ``max_message_bytes`` anyway; these keep one value from filling a
# thread (instructions go into every model request) or breaking the layer that uses it.
MAX_DEPTH = 32  # nesting of maps and arrays inside any param
MAX_SEQ = 2**63 - 1  # seqs are SQLite integers
MAX_TEXT_CHARS = 1_048_576  # thread.send text
MAX_INSTRUCTIONS_CHARS = 262_144  # ~64k tokens, more than a useful system prompt
MAX_NAME_CHARS = 256  # model names, ids, idempotency keys
MAX_TOKEN_CHARS = 1024
MAX_PATH_BYTES = 4095  # PATH_MAX - 1: longer paths fail in every system call
MAX_PATH_PART_BYTES = 255  # NAME_MAX
MAX_TOOLS = 256
MAX_PAGE = 10_000  # items per page of thread.history / thread.list / thread.events


@dataclass(frozen=True)
class Kind:
    """A param type: how the docs name it, its shape, and its limits.

    ``limit`` returns what is wrong with a value of the right shape (naming the limit),
    or None when it is fine.
    """

    name: str
    check: Callable[[Any], bool]
    limit: Callable[[Any], str | None] = lambda value: None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _too_long(value: str, limit: int) -> str | None:
    if len(value) > limit:
        return f"{len(value):,} characters long; the limit is {limit:,}"
    return None


def _text(max_chars: int, *, empty: bool = False) -> Kind:
    """A string of at most ``max_chars`` characters (with more than blanks unless ``empty``)."""
    return Kind(
        f"{'string' if empty else 'non-empty string'} of at most {max_chars:,} characters",
        lambda v: isinstance(v, str) and (empty or bool(v.strip())),
        lambda v: _too_long(v, max_chars),
    )


def _name_problem(value: str) -> str | None:
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        return "not a name: it contains control characters"
    return _too_long(value, MAX_NAME_CHARS)


def _path_problem(value: str) -> str | None:
    if "\0" in value:
        return "not a path: it contains a NUL character"
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > MAX_PATH_BYTES:
        return f"a path of {size:,} bytes; the limit is {MAX_PATH_BYTES:,}"
    longest = max((len(part.encode("utf-8", "surrogatepass")) for part in value.split("/")), default=0)
    if longest > MAX_PATH_PART_BYTES:
        return f"a path with a {longest:,}-byte component; the limit is {MAX_PATH_PART_BYTES} bytes per component"
    if value.startswith("~") and os.path.expanduser(value) == value:
        user = value[1:].split("/", 1)[0]
        return f"a path starting with ~{user}, and there is no user {user!r} (or no home directory)"
    return None


def _tools_problem(value: Any) -> str | None:
    names = value.split(",") if isinstance(value, str) else value
    if len(names) > MAX_TOOLS:
        return f"a list of {len(names):,} tools; the limit is {MAX_TOOLS}"
    for name in names:
        problem = _name_problem(name)
        if problem is not None:
            return f"holding a tool name that is {problem}"
    return None


def _range(low: int, high: int) -> Callable[[Any], str | None]:
    def problem(value: int) -> str | None:
        return None if low <= value <= high else f"out of range: {low:,} to {high:,}"

    return problem


STRING = Kind("string", lambda v: isinstance(v, str))
TOKEN = Kind("string", lambda v: isinstance(v, str), lambda v: _too_long(v, MAX_TOKEN_CHARS))
NAME = Kind(f"non-empty string of at most {MAX_NAME_CHARS} characters", lambda v: isinstance(v, str) and bool(v.strip()), _name_problem)
MESSAGE = _text(MAX_TEXT_CHARS)
INSTRUCTIONS = _text(MAX_INSTRUCTIONS_CHARS, empty=True)
PATH = Kind(f"path (at most {MAX_PATH_BYTES:,} bytes)", lambda v: isinstance(v, str) and bool(v), _path_problem)
BOOL = Kind("boolean", lambda v: isinstance(v, bool))
MAX_STEPS = 100
MAX_ATTACHMENTS = 16
MAX_ATTACHMENT_TEXT = 1_048_576  # characters of one attached text file
STEPS = Kind(f"integer from 1 to {MAX_STEPS}", lambda v: _is_int(v) and v >= 1, lambda v: _range(1, MAX_STEPS)(v))


def _attachments_problem(value: list[Any]) -> str | None:
    if len(value) > MAX_ATTACHMENTS:
        return f"a list of {len(value)} attachments; the limit is {MAX_ATTACHMENTS}"
    for index, item in enumerate(value, start=1):
        if not isinstance(item, dict) or item.get("type") not in ("text", "image"):
            return f"not valid: attachment {index} must be a map with type text or image"
        name = item.get("name", "")
        if not isinstance(name, str) or _name_problem(name):
            return f"not valid: attachment {index} has a bad name"
        if item["type"] == "text":
            if set(item) - {"type", "name", "text"} or not isinstance(item.get("text"), str):
                return f"not valid: text attachment {index} is {{type, name, text}}"
            if len(item["text"]) > MAX_ATTACHMENT_TEXT:
                return f"not valid: attachment {index} has {len(item['text']):,} characters; the limit is {MAX_ATTACHMENT_TEXT:,}"
        else:
            url = item.get("image_url")
            if set(item) - {"type", "name", "image_url"} or not isinstance(url, str) or not url.startswith("data:image/"):
                return f"not valid: image attachment {index} is {{type, name, image_url: a data:image/... URL}}"
    return None


ATTACHMENTS = Kind("list of attachments", lambda v: isinstance(v, list), _attachments_problem)
SPECS = Kind("list of tool specs", lambda v: isinstance(v, list), lambda v: None if len(v) <= MAX_TOOLS else f"a list of {len(v):,} specs; the limit is {MAX_TOOLS}")
OUTPUT = _text(MAX_TEXT_CHARS, empty=True)
SEQ = Kind("integer >= 0", lambda v: _is_int(v) and v >= 0, _range(0, MAX_SEQ))
COUNT = Kind("integer >= 1", lambda v: _is_int(v) and v >= 1, _range(1, MAX_SEQ))
PAGE_SIZE = Kind(f"integer from 1 to {MAX_PAGE:,}", lambda v: _is_int(v) and v >= 1, _range(1, MAX_PAGE))
OFFSET = Kind("integer >= 0", lambda v: _is_int(v) and v >= 0, _range(0, MAX_SEQ))
# An empty (or blank) thread id is a bad_request, never "every thread" (CONTRACT.md 0b).
THREAD_ID = Kind("non-empty thread id", lambda v: isinstance(v, str) and bool(v.strip()), _name_problem)
THREAD_OR_ALL = Kind('non-empty thread id or "*"', lambda v: isinstance(v, str) and bool(v.strip()), _name_problem)
BB_KEY = Kind(f"non-empty string of at most {MAX_KEY_BYTES} bytes", lambda v: isinstance(v, str) and bool(v), key_problem)
BB_PREFIX = Kind(
    f"string of at most {MAX_KEY_BYTES} bytes (may be empty)", lambda v: isinstance(v, str), lambda v: key_problem(v, empty=True)
)
JSON = Kind("any JSON value", lambda v: True)  # what JSON is (and how big) the blackboard checks
MAX_ROOTS = 64
PATHS = Kind(
    f"list of at most {MAX_ROOTS} absolute paths",
    lambda v: isinstance(v, list) and all(isinstance(i, str) for i in v),
    lambda v: f"a list of {len(v)} paths; the limit is {MAX_ROOTS}" if len(v) > MAX_ROOTS else next((p for p in map(_path_problem, v) if p), None),
)
RULES = Kind(
    "list of command prefixes (each a list of words, or a string of words)",
    lambda v: isinstance(v, (list, str)),
    lambda v: f"a list of {len(v)} rules; the limit is 256" if isinstance(v, list) and len(v) > 256 else None,
)
TOOLS = Kind(
    f'list of at most {MAX_TOOLS} names, or a string like "+name,-name"',
    lambda v: isinstance(v, str) or (isinstance(v, list) and all(isinstance(i, str) for i in v)),
    _tools_problem,
)


def nesting_depth(value: Any, stop: int = MAX_DEPTH + 1) -> int:
    """How deeply maps and arrays nest in ``value`` (a scalar is 0), counted up to ``stop``.

    Iterative: a value nested thousands deep must not hit Python's recursion limit.
    """
    deepest = 0
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        depth += 1
        if depth > deepest:
            deepest = depth
            if deepest >= stop:
                return deepest
        stack.extend((child, depth) for child in children)
    return deepest


@dataclass(frozen=True)
class Param:
    name: str
    kind: Kind
    description: str
    required: bool = False
    choices: tuple[Any, ...] = ()
    nullable: bool = False  # an explicit null is a value (not "not given")

    def check(self, value: Any, where: str = "param") -> None:
        if not self.kind.check(value):
            raise ParamsError(f"{where} '{self.name}' must be {_article(self.kind.name)}")
        if self.choices and value not in self.choices:
            allowed = ", ".join(map(str, self.choices))
            raise ParamsError(f"{where} '{self.name}' must be one of {allowed} (got {value!r})")
        problem = self.kind.limit(value)
        if problem is not None:
            raise ParamsError(f"{where} '{self.name}' is {problem}")


def _article(name: str) -> str:
    return ("an " if name[:1] in "aeiou" else "a ") + name


def _config_problem(value: dict[Any, Any]) -> str | None:
    """Checks a ``thread.configure`` change set with the same params as ``thread.create``.

    Keys this table does not know are left to the thread layer, which names them."""
    if not value:
        return "empty; give at least one of " + ", ".join(p.name for p in CONFIG_PARAMS)
    for key, item in value.items():
        if not isinstance(key, str):
            return f"a map with a non-string key ({type(key).__name__}); keys are config names"
        param = CONFIG_BY_NAME.get(key)
        if param is not None:
            try:
                param.check(item, where="config")
            except ParamsError as exc:
                return f"not valid: {exc}"
    return None


CONFIG = Kind("map of config names to values", lambda v: isinstance(v, dict), _config_problem)


# A thread's config: the params of thread.create, and the keys of thread.configure's map.
CONFIG_PARAMS: tuple[Param, ...] = (
    Param("cwd", PATH, "absolute path of an existing directory (default: the daemon's cwd)"),
    Param("model", NAME, "model name"),
    Param("reasoning", STRING, "reasoning effort, as the model accepts it (`echsd models`)", choices=("none", "minimal", "low", "medium", "high", "xhigh", "max", "ultra")),
    Param("instructions", INSTRUCTIONS, "system instructions; `{{cwd}}` is replaced by the cwd (default empty: the model's base prompt)"),
    Param("tools", TOOLS, "tool names, or edits of the default set"),
    Param("writes", STRING, "what apply_patch may do to files (default allow)", choices=("allow", "dry-run", "deny")),
    Param("approval", STRING, "which tool calls wait for approval (default never)", choices=("never", "on-request", "on-write", "always")),
    Param("steps", STEPS, "> 1: each input starts an autonomous run of up to this many turns (default 1)"),
    Param("chain", BOOL, "send previous_response_id and only the new items (the endpoint stores responses; default false)"),
    Param("mcp", TOOLS, "MCP servers (config.toml's `[mcp_servers.NAME]`) whose tools are offered, or edits `+name,-name` (default: every enabled one)"),
    Param("sandbox", STRING, "what the thread's commands and file tools may write (default workspace-write)", choices=("read-only", "workspace-write", "full-access")),
    Param("network", STRING, "whether its commands may use the network (default off, on under full-access)", choices=("on", "off")),
    Param("writable_roots", PATHS, "also writable under workspace-write, besides the cwd and TMPDIR (default: the daemon's)"),
    Param("approval_allow", RULES, "command prefixes run without asking, e.g. [[\"git\", \"status\"]] (besides config.toml's)"),
    Param("approval_deny", RULES, "command prefixes refused without asking (besides config.toml's)"),
    Param("project_docs", BOOL, "send the AGENTS.md files of the cwd's repository to the model (default true; `[tuning] project_docs` false turns it off daemon-wide)"),
)
CONFIG_BY_NAME: dict[str, Param] = {param.name: param for param in CONFIG_PARAMS}
