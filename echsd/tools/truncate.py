"""Head+tail truncation of tool output (sans-IO).

The model needs the start (what ran) and the end (how it ended); the middle is cut with a
marker saying how much was removed, so it can ask for more if it matters.
"""

from __future__ import annotations

DEFAULT_MAX_CHARS = 16_000


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
