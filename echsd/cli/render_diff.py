"""Human-readable forms of a turn's diff and an undo's report."""

from __future__ import annotations

from typing import Any

from echsd.cli.render import Style, printable


def diff_lines(found: dict[str, Any], style: Style) -> list[str]:
    """``echs diff``: a header naming the turn, then the unified diff, coloured like git's."""
    if found.get("turn") is None:
        return ["no turn of this thread changed files (in a git work tree)"]
    if not found.get("paths"):
        return [f"turn {found['turn']} changed no files"]
    stat = found.get("stat") or {}
    header = f"turn {found['turn']} ({found.get('turn_id')}): {stat.get('files', 0)} file(s), +{stat.get('insertions', 0)} -{stat.get('deletions', 0)}"
    if found.get("branch"):
        header += f", committed on {found['branch']}"
    lines = [style.dim(header)]
    for line in printable(str(found.get("diff") or "")).splitlines():
        lines.append(_colored(line, style))
    return lines


def _colored(line: str, style: Style) -> str:
    if line.startswith(("diff --git", "index ", "--- ", "+++ ", "new file", "deleted file")):
        return style.bold(line)
    if line.startswith("@@"):
        return style(line, fg="cyan")
    if line.startswith("+"):
        return style(line, fg="green")
    if line.startswith("-"):
        return style(line, fg="red")
    if line.startswith("[echsd:"):
        return style(line, fg="yellow")
    return line


def undo_lines(result: dict[str, Any]) -> list[str]:
    """``echs undo``: which turns went, which files came back, which were left alone."""
    turns = ", ".join(map(str, result.get("turns") or []))
    lines = [f"undid turn{'s' if len(result.get('turns') or []) > 1 else ''} {turns} ({result.get('items_removed', 0)} history items)"]
    for key, verb in (("restored", "restored"), ("removed", "removed"), ("kept", "left alone (changed by someone else since; --force overwrites)")):
        for path in result.get(key) or []:
            lines.append(f"  {verb}: {printable(str(path))}")
    if result.get("note"):
        lines.append(f"note: {result['note']}")
    return lines
