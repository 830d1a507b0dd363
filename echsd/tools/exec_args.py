"""The limits of ``exec_command``/``write_stdin`` arguments, as Codex applies them (sans-IO).

Codex's JSON types these as ``number``; a model may send ``500`` or ``500.0``. Out-of-range
waits are clamped (as Codex does); values that make no sense (negative, not finite) are
refused with a clear error rather than guessed at. ``max_output_tokens`` may lower the
output budget but never lift it, and never disable it.
"""

from __future__ import annotations

import math
from typing import Any

from echsd.tools.base import ToolError
from echsd.tools.exec_output import DEFAULT_MAX_OUTPUT_TOKENS

MIN_YIELD_TIME_MS = 250
MAX_YIELD_TIME_MS = 30_000
DEFAULT_EXEC_YIELD_TIME_MS = 10_000
DEFAULT_WRITE_STDIN_YIELD_TIME_MS = 250
MIN_EMPTY_POLL_YIELD_TIME_MS = 5_000  # an empty write_stdin is a poll: wait at least this
MAX_EMPTY_POLL_YIELD_TIME_MS = 300_000
MAX_OUTPUT_TOKENS_PROPERTY = {  # the same in both tools' schemas
    "type": "number",
    "description": f"Output token budget; longer output keeps its head and tail. Defaults to {DEFAULT_MAX_OUTPUT_TOKENS} tokens, which is also the most.",
}


def _number(args: dict[str, Any], name: str) -> float | None:
    value = args.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ToolError(f"{name} must be a number, got {value!r}")
    return float(value)


def exec_yield_s(args: dict[str, Any], ceiling_s: float) -> float:
    requested = _number(args, "yield_time_ms")
    if requested is not None and requested < 0:
        raise ToolError(f"yield_time_ms must not be negative, got {requested:g}")
    ms = DEFAULT_EXEC_YIELD_TIME_MS if requested is None else requested
    return min(_clamp(ms, MIN_YIELD_TIME_MS, MAX_YIELD_TIME_MS) / 1000, ceiling_s)


def write_stdin_yield_s(args: dict[str, Any], chars: str, ceiling_s: float) -> float:
    requested = _number(args, "yield_time_ms")
    if requested is not None and requested < 0:
        raise ToolError(f"yield_time_ms must not be negative, got {requested:g}")
    ms = DEFAULT_WRITE_STDIN_YIELD_TIME_MS if requested is None else requested
    ms = _clamp(ms, MIN_YIELD_TIME_MS, MAX_YIELD_TIME_MS)
    if not chars:
        ms = _clamp(ms, MIN_EMPTY_POLL_YIELD_TIME_MS, MAX_EMPTY_POLL_YIELD_TIME_MS)
    return min(ms / 1000, ceiling_s)


def max_output_tokens(args: dict[str, Any]) -> int:
    requested = _number(args, "max_output_tokens")
    if requested is None:
        return DEFAULT_MAX_OUTPUT_TOKENS
    if requested < 1:
        raise ToolError(f"max_output_tokens must be at least 1, got {requested:g}")
    return min(int(requested), DEFAULT_MAX_OUTPUT_TOKENS)


def session_id(args: dict[str, Any]) -> int:
    value = _number(args, "session_id")
    if value is None or not value.is_integer():
        raise ToolError(f"session_id must be the integer exec_command returned, got {args.get('session_id')!r}")
    return int(value)


def _clamp(value: float, low: float, high: float) -> float:
    return max(low, min(value, high))
