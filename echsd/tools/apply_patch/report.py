"""What the model reads back: Codex's success summary, or a unified diff for a dry run."""

from __future__ import annotations

import difflib
from typing import Iterable

from echsd.tools.apply_patch.plan import FileChange

SUCCESS_HEADER = "Success. Updated the following files:"
DRY_RUN_HEADER = "Dry run: no file was changed. The patch applies cleanly and would update the following files:"


def summary(changes: Iterable[FileChange], header: str = SUCCESS_HEADER) -> str:
    """``A``/``M``/``D`` lines grouped in that order, as Codex prints them."""
    changes = list(changes)
    lines = [header]
    for letter in "AMD":
        lines.extend(f"{letter} {change.new_path}" for change in changes if change.letter == letter)
    return "\n".join(lines) + "\n"


def dry_run_report(changes: Iterable[FileChange]) -> str:
    """The summary of what would change, then the diff of it."""
    changes = list(changes)
    return f"{summary(changes, DRY_RUN_HEADER)}\n{unified_diff(changes)}"


def unified_diff(changes: Iterable[FileChange]) -> str:
    """One ``git diff``-style section per operation, in patch order."""
    return "".join(_file_diff(change) for change in changes)


def _file_diff(change: FileChange) -> str:
    old_name = f"a/{change.path}" if change.old_text is not None else "/dev/null"
    new_name = f"b/{change.new_path}" if change.new_text is not None else "/dev/null"
    header = f"diff --git a/{change.path} b/{change.new_path}\n"
    if change.path != change.new_path:
        header += f"rename from {change.path}\nrename to {change.new_path}\n"
    body = difflib.unified_diff(
        _lines(change.old_text), _lines(change.new_text), fromfile=old_name, tofile=new_name, lineterm="\n"
    )
    text = "".join(body)
    if not text:
        text = f"--- {old_name}\n+++ {new_name}\n" if change.old_text != change.new_text else ""
    return header + text


def _lines(text: str | None) -> list[str]:
    if not text:
        return []
    lines = [line + "\n" for line in text.split("\n")]
    if text.endswith("\n"):
        lines.pop()
    else:
        lines[-1] += "\\ No newline at end of file\n"
    return lines
