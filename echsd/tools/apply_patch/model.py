"""What a parsed patch is, and the two ways applying one can fail.

A ``Patch`` is a list of file operations in patch order. Each keeps the patch line it
started on, so an error found later (a file that is missing, lines that are not there)
can still say where in the patch the model should look.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Chunk:
    """One ``@@`` section of an Update: old lines (context and ``-``) become new lines."""

    anchors: tuple[str, ...]  # texts after "@@ ", each searched in turn before the old lines
    old_lines: tuple[str, ...]
    new_lines: tuple[str, ...]
    at_end_of_file: bool  # "*** End of File": the old lines end the file
    line: int  # patch line of the chunk's first line (its "@@" marker, if any)
    # For each new line: the index in old_lines of the context line it repeats, else None.
    # A context line matched loosely keeps the file's own text, not the patch's copy.
    context_of: tuple[int | None, ...]


@dataclass(frozen=True)
class AddFile:
    path: str
    content: str
    line: int


@dataclass(frozen=True)
class DeleteFile:
    path: str
    line: int


@dataclass(frozen=True)
class UpdateFile:
    path: str
    move_to: str | None
    chunks: tuple[Chunk, ...]
    line: int


Operation = AddFile | DeleteFile | UpdateFile


@dataclass(frozen=True)
class Patch:
    operations: tuple[Operation, ...]


class PatchError(Exception):
    """A patch that cannot be applied; the message is written for the model to act on."""


class PatchParseError(PatchError):
    """The text is not a well-formed patch. ``line`` is 1-based in the text as sent (0: none)."""

    def __init__(self, message: str, line: int = 0) -> None:
        self.message = message
        self.line = line
        super().__init__(f"Invalid patch hunk on line {line}: {message}" if line else f"Invalid patch: {message}")


class PatchApplyError(PatchError):
    """A well-formed patch that does not fit the files (or could not be written).

    ``index`` is the position of the failing operation in the patch: the operations before
    it were fine. It is -1 when no single operation is to blame (writing failed).
    """

    def __init__(self, message: str, index: int = -1) -> None:
        self.message = message
        self.index = index
        super().__init__(message)
