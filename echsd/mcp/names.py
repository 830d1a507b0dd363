"""How an MCP server's tool is named and described to the model (sans-IO).

The model sees ``mcp__<server>__<tool>``. The Responses API takes function names of at most
64 characters from ``[A-Za-z0-9_-]``, so any other character becomes ``_``, and a name that
is too long, or that two tools would share once made valid, keeps what fits and ends in a
short hash of the original (server, tool) pair: stable across restarts, distinct between
tools. Descriptions are capped (a server may ship pages of text) and an input schema that
is not a JSON object schema is replaced by an empty one.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Iterable

import orjson

PREFIX = "mcp__"
SEPARATOR = "__"
MAX_NAME = 64
MAX_DESCRIPTION_CHARS = 2048
MAX_SCHEMA_BYTES = 64 * 1024
_INVALID = re.compile(r"[^A-Za-z0-9_-]")
_HASH_CHARS = 8


def _digest(server: str, tool: str) -> str:
    return hashlib.sha1(f"{server}\0{tool}".encode()).hexdigest()[:_HASH_CHARS]


def model_name(server: str, tool: str, hashed: bool = False) -> str:
    """The function name of ``tool`` of ``server`` (``hashed``: with its hash, to tell it
    from another tool that made the same name)."""
    name = _INVALID.sub("_", f"{PREFIX}{server}{SEPARATOR}{tool}")
    if len(name) <= MAX_NAME and not hashed:
        return name
    suffix = "_" + _digest(server, tool)
    return name[: MAX_NAME - len(suffix)] + suffix


def model_names(server: str, tools: Iterable[str], taken: set[str] | None = None) -> dict[str, str]:
    """Tool name -> unique model name, for one server's tools (in a fixed order, so a clash
    is always resolved the same way); ``taken``: names other servers use already."""
    used = set(taken or ())
    names: dict[str, str] = {}
    valid_first = sorted(tools, key=lambda tool: (model_name(server, tool) != f"{PREFIX}{server}{SEPARATOR}{tool}", tool))
    for tool in valid_first:  # a name valid as it is keeps it; a made-valid one yields
        name = model_name(server, tool)
        if name in used:
            name = model_name(server, tool, hashed=True)
        used.add(name)
        names[tool] = name
    return names


def description(text: str | None, server: str, tool: str) -> str:
    """The tool's description for the model: the server's own (capped), or a plain line."""
    text = (text or "").strip() or f"The {tool} tool of the {server} MCP server."
    if len(text) <= MAX_DESCRIPTION_CHARS:
        return text
    return text[: MAX_DESCRIPTION_CHARS - 1].rstrip() + "…"


EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def parameters(schema: Any) -> dict[str, Any] | None:
    """The server's input schema as function parameters; None if it is too large to offer."""
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        return dict(EMPTY_SCHEMA)
    if len(orjson.dumps(schema, default=str)) > MAX_SCHEMA_BYTES:
        return None
    result = {key: value for key, value in schema.items() if key != "$schema"}
    result["type"] = "object"
    if not isinstance(result.get("properties"), dict):
        result["properties"] = {}
    return result
