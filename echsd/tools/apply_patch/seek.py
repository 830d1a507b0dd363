"""Find a run of lines in a file, strictest comparison first, as Codex does (sans-IO).

Models copy context lines imperfectly: trailing spaces get lost, indentation drifts, an
en dash in the source comes back as ``-``. Each search therefore tries four comparisons
in turn and takes the first position that matches under the strictest one that matches
anywhere: exact; ignoring trailing whitespace; ignoring surrounding whitespace; and also
mapping typographic punctuation (dashes, curly quotes, odd spaces) to ASCII.

The file's lines are normalised and indexed (line -> positions) once per comparison,
lazily, so a patch with hundreds of chunks on one large file costs a few passes over it:
a search only tries the places where the pattern's rarest line occurs, and a pattern
with a line the file lacks fails at once. Exact searches scan until the first miss.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Callable

_TYPOGRAPHIC = str.maketrans(
    {
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
        **dict.fromkeys("\u2018\u2019\u201a\u201b", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f", '"'),
        **dict.fromkeys("\u00a0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000", " "),
    }
)


def _typographic(line: str) -> str:
    return line.strip().translate(_TYPOGRAPHIC)


def _exact(line: str) -> str:
    return line


COMPARISONS: tuple[Callable[[str], str], ...] = (_exact, str.rstrip, str.strip, _typographic)


class LineFinder:
    """The lines of one file, searchable for runs of pattern lines."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self._views: dict[int, list[str]] = {0: lines}
        self._positions: dict[int, dict[str, list[int]]] = {}

    def _view(self, level: int) -> list[str]:
        view = self._views.get(level)
        if view is None:
            view = self._views[level] = list(map(COMPARISONS[level], self.lines))
        return view

    def _index(self, level: int) -> dict[str, list[int]]:
        """Where each (normalised) line occurs, in ascending order."""
        positions = self._positions.get(level)
        if positions is None:
            positions = self._positions[level] = {}
            for number, line in enumerate(self._view(level)):
                positions.setdefault(line, []).append(number)
        return positions

    def find(self, pattern: list[str], start: int, *, at_end: bool = False) -> int | None:
        """Index where ``pattern`` begins, at or after ``start``; ``None`` if nowhere.

        With ``at_end`` the pattern is first tried where it would end the file (the
        ``*** End of File`` marker), then searched from ``start`` as usual.
        """
        if not pattern:
            return start
        last = len(self.lines) - len(pattern)
        if last < start:
            return None
        if at_end:
            for level, compare in enumerate(COMPARISONS):
                if self._view(level)[last:] == list(map(compare, pattern)):
                    return last
        for level, compare in enumerate(COMPARISONS):
            found = self._find_run(level, list(map(compare, pattern)), start, last)
            if found is not None:
                return found
        return None

    def _find_run(self, level: int, pattern: list[str], start: int, last: int) -> int | None:
        """Try only where the pattern's rarest line occurs (no occurrence: no match at all).

        Exact searches scan instead, until one misses: a model's patch usually matches
        exactly just below the previous hunk, cheaper to reach than to index the file.
        """
        if level == 0 and 0 not in self._positions:
            found = _scan(self.lines, pattern, start, last)
            if found is None:
                self._index(0)
            return found
        index = self._index(level)
        occurrences = [index.get(line, ()) for line in pattern]
        offset = min(range(len(pattern)), key=lambda k: len(occurrences[k]))
        view = self._view(level)
        size = len(pattern)
        rarest = occurrences[offset]
        for position in rarest[bisect_left(rarest, start + offset) :]:
            begin = position - offset
            if begin > last:
                return None
            if view[begin : begin + size] == pattern:
                return begin
        return None


def _scan(lines: list[str], pattern: list[str], start: int, last: int) -> int | None:
    first, size = pattern[0], len(pattern)
    position = start
    while position <= last:
        try:
            position = lines.index(first, position, last + 1)
        except ValueError:
            return None
        if lines[position : position + size] == pattern:
            return position
        position += 1
    return None
