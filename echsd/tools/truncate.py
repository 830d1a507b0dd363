"""Shaping tool output for the model and the event log (sans-IO).

The model needs the start (what ran) and the end (how it ended); the middle is cut with a
marker saying how much was removed, so it can ask for more if it matters. Control
characters that no terminal text needs (NUL above all) become U+FFFD: stored as JSON, each
would take six bytes (``\u0000``), and binary output is mostly made of them.
"""

from __future__ import annotations

DEFAULT_MAX_CHARS = 16_000
_KEPT_CONTROLS = "\b\t\n\f\r\x1b"  # text layout and ANSI colours
_REPLACED = {code: "\ufffd" for code in range(0x20) if chr(code) not in _KEPT_CONTROLS}


def printable(text: str) -> str:
    """``text`` with binary control characters (NUL, ...) replaced by U+FFFD."""
    return text.translate(_REPLACED)


def truncate_middle(text: str, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    if max_chars <= 0 or len(text) <= max_chars:
        return text
    marker_budget = 80
    keep = max(max_chars - marker_budget, 2)
    head_len = keep // 2
    tail_len = keep - head_len
    head, tail = text[:head_len], text[len(text) - tail_len :]
    cut = len(text) - head_len - tail_len
    cut_lines = text.count("\n", head_len, len(text) - tail_len)
    return f"{head}\n[... {cut} chars ({cut_lines} lines) truncated ...]\n{tail}"
