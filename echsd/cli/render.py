"""Small text-rendering helpers shared by the ``echs`` verbs: colour, tables, times, paths,
truncation. Pure functions over strings; nothing here writes to a stream."""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from typing import Any, Sequence

import click

MIN_LAST_COLUMN = 8
STATE_COLORS = {"running": "green", "idle": "cyan", "paused": "yellow", "killed": "red"}
# Escape sequences (CSI, OSC and the other strings, two-byte), their 8-bit (C1) forms, the
# other control characters but tab and newline, and the bidirectional overrides (which
# make a terminal show text in another order than it reads, e.g. in a command to approve).
_ESCAPES = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"  # CSI: cursor moves, erasing, colours, modes
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"  # OSC/DCS/...: titles, clipboard (an unended one: to the line's end)
    r"|\x1b[ -/]*[0-~]?"  # other escapes (and a lone ESC)
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"
)


def printable(text: str) -> str:
    """Model and tool text made safe for a terminal: escape sequences and control
    characters (which could move the cursor, retitle the window, write the clipboard, ring
    the bell or reprogram the terminal) are dropped, so are bidirectional overrides;
    carriage returns (progress bars) become newlines, so nothing overwrites a line."""
    return _ESCAPES.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))


def terminal_safe(value: Any) -> Any:
    """``value`` (an event's data: maps, lists, strings) with every string ``printable``."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {key: terminal_safe(item) for key, item in value.items()}
    if isinstance(value, list):
        return [terminal_safe(item) for item in value]
    return value


@dataclass(frozen=True)
class Style:
    """Applies colour only when ``color`` is on (a terminal, no NO_COLOR, no --json)."""

    color: bool

    def __call__(self, text: str, **styles: Any) -> str:
        return click.style(text, **styles) if self.color and text else text

    def dim(self, text: str) -> str:
        return self(text, dim=True)

    def bold(self, text: str) -> str:
        return self(text, bold=True)

    def state(self, state: str) -> str:
        return self(state, fg=STATE_COLORS.get(state))


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    style: Style,
    colors: Sequence[str | None] = (),
    *,
    width: int | None = None,
    droppable: Sequence[int] = (),
) -> list[str]:
    """Left-aligned columns; widths come from the plain text, colour is added after padding.

    Within ``width``: the ``droppable`` columns are left out, in that order, while the
    lines are too wide; then the last column is cut from the left (``…/tail``).
    """
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    shown = list(range(len(headers)))

    def line_width() -> int:
        return sum(widths[i] for i in shown) + 2 * (len(shown) - 1)

    cells = [list(row) for row in rows]
    if width is not None:
        for column in droppable:
            if line_width() <= width:
                break
            shown.remove(column)
        last = shown[-1]
        room = max(MIN_LAST_COLUMN, width - (line_width() - widths[last]))
        if widths[last] > room:
            widths[last] = room
            for row in cells:
                row[last] = clip_left(row[last], room)
    lines = [style.bold("  ".join(headers[i].ljust(widths[i]) for i in shown).rstrip())]
    for row in cells:
        parts = []
        for i in shown:
            padded = row[i].ljust(widths[i]) if i != shown[-1] else row[i]
            fg = colors[i] if i < len(colors) else None
            parts.append(style(padded, fg=STATE_COLORS.get(row[i])) if fg == "state" else padded)
        lines.append("  ".join(parts).rstrip())
    return lines


def clip_left(text: str, limit: int) -> str:
    """The end of ``text`` in ``limit`` characters (paths say most at their end)."""
    return text if len(text) <= limit else "…" + text[len(text) - limit + 1 :]


def ago(timestamp: float | None, now: float | None = None) -> str:
    """``42s ago``, ``5m ago``, ``3h ago``, ``2d ago``."""
    if not timestamp:
        return "-"
    seconds = max(0.0, (now if now is not None else time.time()) - timestamp)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return f"{int(seconds)}s ago"


def duration(seconds: float, *, whole: bool = False) -> str:
    """``850ms``, ``12.3s``, ``4m 05s``, ``2h 13m``, ``3d 4h``; ``whole``: ``0s``, ``12s``
    (a clock that ticks)."""
    if whole and seconds < 60:
        return f"{max(0, int(seconds))}s"
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h {minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours}h"


def clock(timestamp: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(timestamp))


def when(timestamp: float | None) -> str:
    if not timestamp:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(timestamp)) + f" ({ago(timestamp)})"


def short_path(path: str) -> str:
    home = os.path.expanduser("~")
    if home not in ("", "/") and (path == home or path.startswith(home + os.sep)):
        return "~" + path[len(home) :]
    return path


def one_line(text: str, limit: int = 80) -> str:
    """The text on one line, cut to ``limit`` characters with an ellipsis."""
    flat = " ".join(printable(str(text)).split())
    return flat if len(flat) <= limit else flat[: max(0, limit - 1)] + "…"


def approval_text(request: dict[str, Any], limit: int = 300) -> str:
    """What a waiting call asks, on one line: its summary and, for an escalation, the
    model's justification (cut so that both show)."""
    arguments = request.get("arguments")
    why = arguments.get("justification") if isinstance(arguments, dict) and arguments.get("sandbox_permissions") == "require_escalated" else None
    summary = str(request.get("summary") or "")
    if not isinstance(why, str) or not why.strip():
        return one_line(summary, limit)
    reason = one_line(why, max(20, limit // 3))
    return one_line(summary, max(20, limit - len(reason) - 8)) + f" (why: {reason})"


def clip_lines(text: str, max_lines: int = 12, max_chars: int = 2000) -> list[str]:
    """Head of ``text`` as lines, with a marker saying how much was cut."""
    lines = printable(str(text)).splitlines()
    if len(lines) == max_lines + 1:
        max_lines += 1  # the marker would take the place of the one line it hides
    shown: list[str] = []
    used = 0
    cut = False
    for line in lines[:max_lines]:
        if used + len(line) > max_chars:
            shown.append(line[: max(0, max_chars - used)] + "…")
            cut = True
            break
        shown.append(line)
        used += len(line)
    hidden = len(lines) - len(shown)
    if hidden > 0 or cut:
        shown.append(f"… ({hidden} more line{'s' if hidden != 1 else ''}, {len(text)} chars in all)")
    return shown


def head_and_tail(text: str, head: int = 10, tail: int = 4, width: int = 200) -> list[str]:
    """A long text's first and last lines with a marker saying how many lie between (a
    patch reads best by its file headers and its end), each line cut to ``width``."""
    lines = printable(str(text)).splitlines() or [""]
    cut = [line if len(line) <= width else line[: width - 1] + "…" for line in lines]
    if len(cut) <= head + tail + 1:
        return cut
    hidden = len(cut) - head - tail
    return [*cut[:head], f"… ({hidden} more lines)", *cut[-tail:]]


def tokens(count: int | None) -> str:
    """``950``, ``12.3k``, ``4.1M``."""
    value = int(count or 0)
    if value < 1000:
        return str(value)
    if value < 1_000_000:
        return f"{value / 1000:.1f}k"
    return f"{value / 1_000_000:.1f}M"
