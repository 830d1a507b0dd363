"""Parse the Codex patch format into a ``Patch`` (sans-IO).

The grammar is Codex's (``*** Begin Patch`` ... ``*** End Patch`` around Add/Delete/Update
operations, ``@@`` chunks of `` ``/``-``/``+`` lines, ``*** End of File``), read with the
same leniency as Codex's parser: the text is trimmed, marker and header lines may be
padded with whitespace, a trailing ``\\r`` on a line is dropped, the patch may arrive
wrapped in its heredoc lines (``<<'EOF'`` ... ``EOF``), and whitespace-only lines between
operations and chunks are skipped. Two small extensions over Codex, both things models
write: several ``@@ anchor`` lines in a row narrow the search step by step (as Codex's own
instructions suggest), and a unified-diff range header (``@@ -12,7 +12,8 @@``) is read as a
bare ``@@``. Errors name the line, counted in the text exactly as it was sent.
"""

from __future__ import annotations

import re
from itertools import islice, takewhile
from operator import methodcaller

from echsd.tools.apply_patch.model import AddFile, Chunk, DeleteFile, Operation, Patch, PatchParseError, UpdateFile

BEGIN_PATCH = "*** Begin Patch"
END_PATCH = "*** End Patch"
ADD_FILE = "*** Add File:"
DELETE_FILE = "*** Delete File:"
UPDATE_FILE = "*** Update File:"
MOVE_TO = "*** Move to:"
END_OF_FILE = "*** End of File"
VALID_HEADERS = "'*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'"

_HEREDOC_OPENER = re.compile(r"""<<-?\s*(['"]?)([A-Za-z_][A-Za-z0-9_]*)\1""")
_DIFF_RANGE = re.compile(r"-\d+(,\d+)? \+\d+(,\d+)? @@.*")
_LINE_END_CR = re.compile(r"\r(?=\n|\Z)")  # one trailing "\r" per line is dropped
_IS_ADDED = methodcaller("startswith", "+")


def parse_patch(text: str) -> Patch:
    """Parse ``text``; raise ``PatchParseError`` saying what is wrong and on which line."""
    body, first_number = _open_envelope(text)
    return Patch(_Reader(body, first_number).operations())


def _open_envelope(text: str) -> tuple[list[str], int]:
    """The lines between Begin and End Patch, and the line number of the first of them."""
    stripped = text.strip()
    skipped = text[: len(text) - len(text.lstrip())].count("\n")
    lines = _LINE_END_CR.sub("", stripped).split("\n")
    problem = _envelope_problem(lines)
    if problem is None:
        return lines[1:-1], skipped + 2
    opener = _HEREDOC_OPENER.fullmatch(lines[0].strip())
    if opener and len(lines) >= 4 and lines[-1].strip() == opener.group(2):
        inner = lines[1:-1]
        if _envelope_problem(inner) is None:
            return inner[1:-1], skipped + 3
        problem = _envelope_problem(inner)
    raise PatchParseError(problem)


def _envelope_problem(lines: list[str]) -> str | None:
    first, last = lines[0].strip(), lines[-1].strip()
    if first != BEGIN_PATCH:
        found = f", got: {_shorten(first)!r}" if first else " (the patch is empty)"
        return f"The first line of the patch must be '{BEGIN_PATCH}'{found}"
    if len(lines) < 2 or last != END_PATCH:
        return f"The last line of the patch must be '{END_PATCH}', got: {_shorten(last)!r}"
    return None


def _shorten(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _header_path(header: str, marker: str, number: int) -> str:
    path = header[len(marker) :].strip()
    if not path:
        raise PatchParseError(f"'{header}' is missing the file path", number)
    if "\0" in path:
        raise PatchParseError(f"{_shorten(header)!r}: the path contains a NUL character, which no file name can hold", number)
    return path


class _Reader:
    """Walks the body lines once; ``position`` is the index of the next unread line."""

    def __init__(self, lines: list[str], first_number: int) -> None:
        self.lines = lines
        self.first_number = first_number
        self.position = 0

    def number(self, index: int) -> int:
        return self.first_number + index

    def operations(self) -> tuple[Operation, ...]:
        found: list[Operation] = []
        while self.position < len(self.lines):
            if not self.lines[self.position].strip():
                self.position += 1
                continue
            found.append(self._operation())
        return tuple(found)

    def _operation(self) -> Operation:
        index = self.position
        header, number = self.lines[index].strip(), self.number(index)
        self.position += 1
        if header.startswith(ADD_FILE):
            return AddFile(_header_path(header, ADD_FILE, number), self._added_content(), number)
        if header.startswith(DELETE_FILE):
            return DeleteFile(_header_path(header, DELETE_FILE, number), number)
        if header.startswith(UPDATE_FILE):
            return self._update(_header_path(header, UPDATE_FILE, number), number)
        raise PatchParseError(f"'{_shorten(header)}' is not a valid hunk header. Valid hunk headers: {VALID_HEADERS}", number)

    def _added_content(self) -> str:
        """The run of ``+`` lines, without their ``+`` (C-level loops: a file written in
        one call can be 100,000 lines)."""
        added = list(takewhile(_IS_ADDED, islice(self.lines, self.position, None)))
        self.position += len(added)
        if not added:
            return ""
        return "\n".join(added).replace("\n+", "\n")[1:] + "\n"

    def _update(self, path: str, number: int) -> UpdateFile:
        move_to = None
        if self.position < len(self.lines) and self.lines[self.position].strip().startswith(MOVE_TO):
            move_to = _header_path(self.lines[self.position].strip(), MOVE_TO, self.number(self.position))
            self.position += 1
        chunks: list[Chunk] = []
        while self.position < len(self.lines):
            line = self.lines[self.position]
            if not line.strip():
                self.position += 1
                continue
            if line.startswith("*"):
                break
            chunks.append(self._chunk(first=not chunks))
        if not chunks:
            raise PatchParseError(f"Update file hunk for path '{path}' is empty", number)
        return UpdateFile(path, move_to, tuple(chunks), number)

    def _chunk(self, *, first: bool) -> Chunk:
        start = self.position
        anchors = self._anchors()
        if self.position == start and not first:
            got = self.lines[self.position]
            raise PatchParseError(f"Expected update hunk to start with a @@ context marker, got: '{_shorten(got)}'", self.number(start))
        old: list[str] = []
        new: list[str] = []
        context_of: list[int | None] = []
        body_lines = 0
        at_end = False
        while self.position < len(self.lines):
            line = self.lines[self.position]
            if line.rstrip() == END_OF_FILE:
                if body_lines == 0:
                    break
                at_end = True
                self.position += 1
                break
            prefix, rest = line[:1], line[1:]
            if prefix in ("", " "):
                context_of.append(len(old))
                old.append(rest)
                new.append(rest)
            elif prefix == "-":
                old.append(rest)
            elif prefix == "+":
                context_of.append(None)
                new.append(rest)
            elif body_lines == 0:
                raise PatchParseError(
                    f"Unexpected line found in update hunk: '{_shorten(line)}'. Every line should start with "
                    "' ' (context line), '+' (added line), or '-' (removed line)",
                    self.number(self.position),
                )
            else:
                break
            body_lines += 1
            self.position += 1
        if body_lines == 0:
            raise PatchParseError("Update hunk does not contain any lines", self.number(self.position))
        return Chunk(anchors, tuple(old), tuple(new), at_end, self.number(start), tuple(context_of))

    def _anchors(self) -> tuple[str, ...]:
        """Consume the chunk's ``@@`` lines; return the anchor texts they name, in order."""
        anchors: list[str] = []
        while self.position < len(self.lines):
            line = self.lines[self.position]
            if line.rstrip() == "@@":
                pass
            elif line.startswith("@@ "):
                text = line[3:]
                if text.strip() and not _DIFF_RANGE.fullmatch(text.strip()):
                    anchors.append(text)
            else:
                break
            self.position += 1
        return tuple(anchors)
