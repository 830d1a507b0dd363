"""Work out everything a patch would do, in memory, before any file is touched.

Operations are played in patch order against an overlay of pending contents on top of the
file view, so a later operation sees what an earlier one did (an Update after an Add of
the same file patches the added text), exactly as applying them one by one would. The
result is one ``FileChange`` per operation (for the summary and the diff) and the final
state of every path touched (for the commit). The first operation that cannot be done
raises ``PatchApplyError`` naming it; nothing has been written at that point.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from echsd.tools.apply_patch.model import AddFile, DeleteFile, Operation, Patch, PatchApplyError, UpdateFile
from echsd.tools.apply_patch.update import apply_chunks
from echsd.tools.apply_patch.view import FileView


@dataclass(frozen=True)
class FileChange:
    letter: str  # "A" added, "M" modified (or moved), "D" deleted, as in Codex's summary
    path: str  # as written in the patch
    new_path: str  # where the content ends up: the Move to path, else ``path``
    old_text: str | None  # None: the file did not exist
    new_text: str | None  # None: the file is deleted


@dataclass(frozen=True)
class Plan:
    changes: tuple[FileChange, ...]
    final: dict[str, str | None]  # view key -> content to write, or None to delete


def plan_patch(patch: Patch, view: FileView) -> Plan:
    if not patch.operations:
        raise PatchApplyError("No files were modified.", index=0)
    planner = _Planner(view)
    changes = []
    for index, operation in enumerate(patch.operations):
        try:
            changes.append(planner.play(operation))
        except PatchApplyError as exc:
            exc.index = index
            raise
        except OSError as exc:
            raise PatchApplyError(f"Failed to read {operation.path} (patch line {operation.line}): {exc.strerror or exc}", index) from None
    return Plan(tuple(changes), planner.pending)


class _Planner:
    def __init__(self, view: FileView) -> None:
        self.view = view
        self.pending: dict[str, str | None] = {}

    def play(self, operation: Operation) -> FileChange:
        key = self.view.resolve(operation.path)
        where = f"{operation.path} (patch line {operation.line})"
        if isinstance(operation, AddFile):
            self._check_writable(where, key)
            old = self._text(key, strict=False) if self._is_file(key) else None
            self.pending[key] = operation.content
            return FileChange("A", operation.path, operation.path, old, operation.content)
        if isinstance(operation, DeleteFile):
            if self._is_dir(key):
                raise PatchApplyError(f"Failed to delete file {where}: it is a directory (Delete File removes files only)")
            if not self._is_file(key):
                raise PatchApplyError(f"Failed to delete file {where}: No such file or directory")
            old = self._text(key, strict=False)
            self.pending[key] = None
            return FileChange("D", operation.path, operation.path, old, None)
        return self._update(operation, key, where)

    def _update(self, operation: UpdateFile, key: str, where: str) -> FileChange:
        failed = f"Failed to read file to update {where}"
        if self._is_dir(key):
            raise PatchApplyError(f"{failed}: it is a directory")
        if not self._is_file(key):
            raise PatchApplyError(f"{failed}: No such file or directory")
        old = self._text(key)
        if old is None:
            raise PatchApplyError(f"{failed}: it is not UTF-8 text")
        new = apply_chunks(old, operation.chunks, operation.path)
        destination = key
        if operation.move_to is not None:
            destination = self.view.resolve(operation.move_to)
            self._check_writable(f"{operation.move_to} (patch line {operation.line})", destination)
            if destination != key:
                self.pending[key] = None
        self.pending[destination] = new
        return FileChange("M", operation.path, operation.move_to or operation.path, old, new)

    def _is_file(self, key: str) -> bool:
        if key in self.pending:
            return self.pending[key] is not None
        return self.view.exists(key) and not self.view.is_dir(key)

    def _is_dir(self, key: str) -> bool:
        if self.pending.get(key) is not None:
            return False
        prefix = key.rstrip(os.sep) + os.sep
        if any(path.startswith(prefix) for path, text in self.pending.items() if text is not None):
            return True
        return key not in self.pending and self.view.is_dir(key)

    def _text(self, key: str, *, strict: bool = True) -> str | None:
        """The file's current text; ``None`` when it is not UTF-8 (``strict=False``: decoded lossily)."""
        if key in self.pending:
            return self.pending[key]
        data = self.view.read_bytes(key)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return None if strict else data.decode("utf-8", errors="replace")

    def _check_writable(self, where: str, key: str) -> None:
        if self._is_dir(key):
            raise PatchApplyError(f"Failed to write file {where}: it is a directory")
        parent = os.path.dirname(key)
        while parent and parent != os.path.dirname(parent):
            if self._is_file(parent):
                raise PatchApplyError(f"Failed to write file {where}: {parent} is a file, not a directory")
            parent = os.path.dirname(parent)
