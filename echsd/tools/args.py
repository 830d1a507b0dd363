"""Parse and check a function call's arguments against the tool's JSON schema (sans-IO).

Model output is untrusted: arguments may be invalid JSON, not an object, miss required
fields or carry wrong types. Each problem becomes one clear ``ToolError`` message that the
model reads as the call's output, so it can correct itself.
"""

from __future__ import annotations

from typing import Any

import orjson

from echsd.tools.base import ToolError

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


def parse_arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str):
        raise ToolError(f"invalid arguments: expected a JSON object string, got {type(raw).__name__}")
    if not raw.strip():
        return {}
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ToolError(f"invalid arguments: not valid JSON ({exc}); send a JSON object") from None
    if not isinstance(value, dict):
        raise ToolError(f"invalid arguments: expected a JSON object, got {type(value).__name__}")
    return value


def check_arguments(args: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """Check required fields and top-level types; unknown fields are refused too."""
    properties: dict[str, Any] = schema.get("properties", {})
    missing = [name for name in schema.get("required", []) if name not in args]
    if missing:
        raise ToolError(f"invalid arguments: missing required field(s): {', '.join(missing)}")
    if schema.get("additionalProperties") is False:
        extra = sorted(set(args) - set(properties))
        if extra:
            raise ToolError(f"invalid arguments: unknown field(s): {', '.join(extra)}")
    for name, value in args.items():
        expected = properties.get(name, {}).get("type")
        if expected is None or value is None and name not in schema.get("required", []):
            continue
        types = expected if isinstance(expected, list) else [expected]
        python_types = tuple(t for name_ in types for t in _JSON_TYPES.get(name_, ()))
        if not python_types:
            continue
        is_bool = isinstance(value, bool)
        if not isinstance(value, python_types) or (is_bool and bool not in python_types):
            raise ToolError(f"invalid arguments: field {name!r} must be {' or '.join(types)}, got {_json_type(value)}")
    return args


def _json_type(value: Any) -> str:
    for name, types in _JSON_TYPES.items():
        if isinstance(value, types) and not (isinstance(value, bool) and name != "boolean"):
            return name
    return "null" if value is None else type(value).__name__
