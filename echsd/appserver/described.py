"""What the app-server shows of a command or a patch, worked out once (sans-IO).

Every app-server connection watching a thread describes each of its calls from the same
``tool.started`` event (the same strings), and ``thread/read`` describes them again: a
memo bounded in entries and characters makes a command or patch of megabytes read once.
A patch past ``FULLY_DESCRIBED_CHARS`` is not parsed on the event loop at all: its files
are listed by one regex scan, without diffs (the tool itself parses it off the loop).
"""

from __future__ import annotations

import os
import re
import shlex
from collections import OrderedDict
from typing import Any, Callable

from echsd.tools.apply_patch.model import AddFile, DeleteFile, PatchError, UpdateFile
from echsd.tools.apply_patch.parser import parse_patch
from echsd.tools.apply_patch.shell import recognise_shell_patch

FULLY_DESCRIBED_CHARS = 1024 * 1024
_FILE_HEADER = re.compile(
    r"^[ \t]*\*\*\* (Add File|Delete File|Update File):[ \t]*(.*?)[ \t\r]*$(?:\n[ \t]*\*\*\* Move to:[ \t]*(.*?)[ \t\r]*$)?",
    re.MULTILINE,
)


class _Memo:
    """The last descriptions of calls, bounded in entries and in their keys' characters.

    Every app-server connection watching a thread describes each of its calls from the same
    event (the same strings), and ``thread/read`` describes them again: a command or patch
    of megabytes is read once, not once per watcher and read."""

    def __init__(self, entries: int = 256, chars: int = 32 * 1024 * 1024) -> None:
        self._entries, self._chars = entries, chars
        self._held = 0
        self._values: OrderedDict[tuple[str, str, str], Any] = OrderedDict()

    def get(self, key: tuple[str, str, str], compute: Callable[[], Any]) -> Any:
        if key in self._values:
            self._values.move_to_end(key)
            return self._values[key]
        value = compute()
        self._values[key] = value
        self._held += len(key[1])
        while len(self._values) > self._entries or (self._held > self._chars and len(self._values) > 1):
            old, _ = self._values.popitem(last=False)
            self._held -= len(old[1])
        return value


_MEMO = _Memo()


def described_command(command: str, workdir: str) -> tuple[str, str, list[dict[str, Any]], str]:
    """(kind, where, changes, quoted command) of an ``exec_command``; a shell ``apply_patch``
    is a fileChange."""

    def describe() -> tuple[str, str, list[dict[str, Any]], str]:
        shell_patch = recognise_shell_patch(command)
        if shell_patch is None:
            return "commandExecution", workdir, [], shlex.join(["bash", "-c", command])
        base = join_path(workdir, shell_patch.workdir) if shell_patch.workdir else workdir
        return "fileChange", base, patch_changes(shell_patch.patch, base), ""

    result: tuple[str, str, list[dict[str, Any]], str] = _MEMO.get(("exec_command", command, workdir), describe)
    return result


def described_patch(text: str, cwd: str) -> list[dict[str, Any]]:
    changes: list[dict[str, Any]] = _MEMO.get(("apply_patch", text, cwd), lambda: patch_changes(text, cwd))
    return changes


def patch_changes(text: str, cwd: str) -> list[dict[str, Any]]:
    """The files a patch touches, as ``FileUpdateChange`` objects; [] if it does not parse."""
    if len(text) > FULLY_DESCRIBED_CHARS:
        return listed_changes(text, cwd)
    try:
        patch = parse_patch(text)
    except PatchError:
        return []
    changes: list[dict[str, Any]] = []
    for op in patch.operations:
        path = join_path(cwd, op.path)
        if isinstance(op, AddFile):
            changes.append({"path": path, "kind": {"type": "add"}, "diff": op.content})
        elif isinstance(op, DeleteFile):
            changes.append({"path": path, "kind": {"type": "delete"}, "diff": ""})
        elif isinstance(op, UpdateFile):
            move = join_path(cwd, op.move_to) if op.move_to else None
            changes.append({"path": path, "kind": {"type": "update", "move_path": move}, "diff": _update_diff(op)})
    return changes


def listed_changes(text: str, cwd: str) -> list[dict[str, Any]]:
    """The files a (large) patch names, by one scan of its headers, without diffs."""
    changes: list[dict[str, Any]] = []
    for found in _FILE_HEADER.finditer(text):
        verb, path, move = found.groups()
        if verb == "Update File":
            kind: dict[str, Any] = {"type": "update", "move_path": join_path(cwd, move) if move else None}
        else:
            kind = {"type": "add" if verb == "Add File" else "delete"}
        changes.append({"path": join_path(cwd, path), "kind": kind, "diff": ""})
    return changes


def _update_diff(op: UpdateFile) -> str:
    """A unified-diff body of an Update's chunks (context, removed and added lines)."""
    lines: list[str] = []
    for chunk in op.chunks:
        lines.append("@@ " + " ".join(chunk.anchors) if chunk.anchors else "@@")
        old, added = 0, []
        for new_line, context in zip(chunk.new_lines, chunk.context_of):
            if context is None:
                added.append("+" + new_line)
                continue
            lines.extend("-" + removed for removed in chunk.old_lines[old:context])
            lines.extend(added)
            lines.append(" " + new_line)
            old, added = context + 1, []
        lines.extend("-" + removed for removed in chunk.old_lines[old:])
        lines.extend(added)
    return "\n".join(lines) + "\n" if lines else ""


def join_path(base: str, path: str) -> str:
    return os.path.normpath(os.path.join(base, os.path.expanduser(path)))
