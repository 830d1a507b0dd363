"""Write a plan's final states to the file view, all or nothing.

Deletions go first (a deleted file may have to make way for a directory of the same
name), then writes, each creating missing parent directories. Before a path is changed
its present state is saved; if any step fails, every path already changed is restored in
reverse order and the directories created are removed, so the tree is as before.
"""

from __future__ import annotations

import os

from echsd.logs import get_logger
from echsd.tools.apply_patch.model import PatchApplyError
from echsd.tools.apply_patch.view import FileView

log = get_logger(__name__)


def commit(view: FileView, final: dict[str, str | None]) -> None:
    saved: list[tuple[str, object]] = []
    created: list[str] = []
    ordered = sorted(final.items(), key=lambda item: item[1] is not None)
    key = ""
    try:
        for key, text in ordered:
            if text is None and not view.exists(key):
                continue
            saved.append((key, view.snapshot(key)))
            if text is None:
                view.delete(key)
            else:
                created.extend(view.make_dirs(os.path.dirname(key)))
                view.write(key, text.encode("utf-8"))
    except OSError as exc:
        failures = _undo(view, saved, created)
        undone = "no file was changed" if not failures else f"could not restore: {', '.join(failures)}"
        raise PatchApplyError(f"Failed to write {key}: {exc.strerror or exc}; {undone}") from None


def _undo(view: FileView, saved: list[tuple[str, object]], created: list[str]) -> list[str]:
    failures = []
    for key, snapshot in reversed(saved):
        try:
            view.restore(key, snapshot)
        except OSError as exc:
            log.error("apply_patch rollback failed", path=key, error=str(exc))
            failures.append(key)
    for directory in reversed(created):
        try:
            view.delete(directory)
        except OSError as exc:
            log.warning("apply_patch could not remove a directory it created", path=directory, error=str(exc))
    return failures
