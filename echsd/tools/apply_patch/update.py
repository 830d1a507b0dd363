"""Apply an Update's chunks to a file's text, giving the new text (sans-IO).

Chunks are located in patch order with a cursor that only moves forward: each ``@@``
anchor is searched from the cursor, then the chunk's old lines. Every replacement is
found before any is made, so a chunk that does not fit leaves nothing half done.

As in Codex: a chunk with only ``+`` lines is appended at the end of the file; a chunk
whose old lines are not found is retried without a trailing empty line (models often
add one for the file's final newline); the result always ends with a newline. Beyond
Codex: a ``+``-only chunk under an ``@@`` anchor goes right after the anchor line, where
the model meant it; a context line matched loosely (other whitespace, typographic quotes)
keeps the file's text instead of the patch's copy; CRLF files stay CRLF, a UTF-8 BOM
stays, and a blank last line is kept.
"""

from __future__ import annotations

from echsd.tools.apply_patch.model import Chunk, PatchApplyError
from echsd.tools.apply_patch.seek import LineFinder

BOM = "\ufeff"

Replacement = tuple[int, int, list[str]]  # (first line, how many old lines, new lines)


def apply_chunks(original: str, chunks: tuple[Chunk, ...], path: str) -> str:
    bom = BOM if original.startswith(BOM) else ""
    text = original[len(bom) :]
    eol = "\r\n" if "\r\n" in text and text.count("\r\n") == text.count("\n") else "\n"
    lines = text.split(eol)
    if lines[-1] == "":
        lines.pop()
    new_lines = _splice(lines, _locate(LineFinder(lines), chunks, path))
    return bom + (eol.join(new_lines) + eol if new_lines else "")


def _locate(finder: LineFinder, chunks: tuple[Chunk, ...], path: str) -> list[Replacement]:
    lines = finder.lines
    replacements: list[Replacement] = []
    cursor = 0
    for chunk in chunks:
        for anchor in chunk.anchors:
            found = finder.find([anchor], cursor)
            if found is None:
                raise PatchApplyError(f"Failed to find context '{anchor}' in {path} (hunk at patch line {chunk.line}){_earlier(finder, [anchor], cursor)}")
            cursor = found + 1
        if not chunk.old_lines:
            replacements.append((cursor if chunk.anchors else len(lines), 0, list(chunk.new_lines)))
            continue
        pattern, new = list(chunk.old_lines), list(chunk.new_lines)
        found = finder.find(pattern, cursor, at_end=chunk.at_end_of_file)
        if found is None and pattern[-1] == "":
            pattern = pattern[:-1]
            if new and new[-1] == "":
                new = new[:-1]
            found = finder.find(pattern, cursor, at_end=chunk.at_end_of_file)
        if found is None:
            expected = "\n".join(chunk.old_lines)
            raise PatchApplyError(
                f"Failed to find expected lines in {path} (hunk at patch line {chunk.line})"
                f"{_earlier(finder, pattern, cursor)}:\n{expected}"
            )
        replacements.append((found, len(pattern), _keep_file_context(lines, found, len(pattern), new, chunk.context_of)))
        cursor = found + len(pattern)
    # Regions found later start at or after the cursor, so they never overlap; only an
    # insertion at the very end can precede them in patch order (the sort is stable).
    replacements.sort(key=lambda replacement: replacement[0])
    return replacements


def _keep_file_context(lines: list[str], found: int, size: int, new: list[str], context_of: tuple[int | None, ...]) -> list[str]:
    """The new lines, with each context line as the file has it (it may have matched loosely)."""
    return [
        lines[found + source] if source is not None and source < size else text
        for text, source in zip(new, context_of)
    ]


def _earlier(finder: LineFinder, pattern: list[str], cursor: int) -> str:
    """A hint when the lines exist, but above where the search started."""
    found = finder.find(pattern, 0) if cursor else None
    if found is None:
        return ""
    return (
        f"; they are at line {found + 1}, above line {cursor + 1} where the search started "
        "(after the previous hunk or anchor): hunks must follow the order of the file"
    )


def _splice(lines: list[str], replacements: list[Replacement]) -> list[str]:
    result: list[str] = []
    position = 0
    for start, length, new in replacements:
        result.extend(lines[position:start])
        result.extend(new)
        position = start + length
    result.extend(lines[position:])
    return result
