"""A pending approval as a list shows it: its arguments and summary cut to a bounded size.

A tool call's arguments may be megabytes (a whole file written by one command), and many
calls may wait at once; a list of them must still fit a frame and a terminal. So in a list
every string is cut past ``LISTED_TEXT_CHARS`` (with a note of how much is left out), maps
and arrays past ``LISTED_ITEMS`` entries, nesting past ``LISTED_DEPTH``, and everything
past ``LISTED_BUDGET`` characters in all. ``arguments_truncated`` says whether anything was
cut; ``approval.get`` gives the request whole. The walk looks at each value once and copies
at most the budget: it costs nothing in proportion to the arguments' size.
"""

from __future__ import annotations

from typing import Any

LISTED_TEXT_CHARS = 2000  # of one string (and of the summary)
LISTED_ITEMS = 64  # entries of one map or array
LISTED_DEPTH = 8  # levels of maps and arrays
LISTED_BUDGET = 16_384  # characters of strings and keys in all
CUT = "…"


def listed_form(arguments: Any, summary: str) -> dict[str, Any]:
    """``{arguments, summary, arguments_truncated}`` as a list shows them."""
    cutter = _Cutter()
    shown = cutter.value(arguments, 0)
    return {"arguments": shown, "summary": _cut_text(summary, LISTED_TEXT_CHARS), "arguments_truncated": cutter.cut}


def _cut_text(text: str, keep: int) -> str:
    if len(text) <= keep:
        return text
    return f"{text[:keep]}{CUT} [{len(text) - keep:,} more characters; approval.get gives them all]"


class _Cutter:
    def __init__(self) -> None:
        self.left = LISTED_BUDGET
        self.cut = False

    def value(self, value: Any, depth: int) -> Any:
        if isinstance(value, str):
            keep = min(LISTED_TEXT_CHARS, max(self.left, 0))
            self.left -= min(len(value), keep)
            if len(value) > keep:
                self.cut = True
                return _cut_text(value, keep)
            return value
        if isinstance(value, dict):
            return self._container(value.items(), len(value), depth, keyed=True)
        if isinstance(value, list):
            return self._container(((None, item) for item in value), len(value), depth, keyed=False)
        return value  # numbers, booleans, null

    def _container(self, entries: Any, size: int, depth: int, *, keyed: bool) -> Any:
        if depth >= LISTED_DEPTH and size:
            self.cut = True
            return f"{CUT} [{size:,} {'entries' if keyed else 'items'} nested too deep to list; approval.get gives them all]"
        shown: Any = {} if keyed else []
        taken = 0
        for key, item in entries:
            if taken == LISTED_ITEMS or self.left <= 0:
                break
            taken += 1
            if keyed:
                name = str(key)
                self.left -= min(len(name), LISTED_TEXT_CHARS)
                self.cut |= len(name) > LISTED_TEXT_CHARS
                shown[_cut_text(name, LISTED_TEXT_CHARS)] = self.value(item, depth + 1)
            else:
                shown.append(self.value(item, depth + 1))
        if taken < size:
            self.cut = True
            note = f"{CUT} [{size - taken:,} more; approval.get gives them all]"
            if keyed:
                shown[CUT] = note
            else:
                shown.append(note)
        return shown
