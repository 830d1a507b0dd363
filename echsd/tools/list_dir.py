"""``list_dir``: a directory's entries to some depth, the way Codex's list_dir shows them.

Output as in Codex: ``Absolute path: <dir>``, then one line per entry in the order of its
path relative to the directory, indented two spaces per level, with ``/`` after
directories, ``@`` after symlinks (never followed) and ``?`` after other special files;
``offset`` (1-based, default 1) and ``limit`` (default 25) page through that order, and
``More than <n> entries found`` says a page is not the last. ``depth`` defaults to 2.

The walk keeps only the ``offset + limit`` first entries in that order (a bounded heap),
so a huge tree costs time, never memory; the time is bounded too. Unlike Codex a
subdirectory that cannot be read is listed without its contents rather than failing the
call, and a relative ``dir_path`` is resolved against the thread's cwd.
"""

from __future__ import annotations

import heapq
import os
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from echsd.tools.base import ToolContext, ToolError, ToolResult, ToolSpec
from echsd.tools.fsaccess import NOTHING_HIDDEN, Budget, HiddenPaths, hidden_paths, hidden_roots, is_hidden, lossy_prefix, off_loop, os_error_text, refuse_hidden, resolve, whole_number

DEFAULT_LIMIT = 25
DEFAULT_DEPTH = 2
MAX_NAME_BYTES = 500
INDENT = "  "
WALK_TIMEOUT_S = 60.0

SPEC = ToolSpec(
    name="list_dir",
    description="Lists entries in a local directory with 1-indexed entry numbers and simple type labels.",
    parameters={
        "type": "object",
        "properties": {
            "dir_path": {"type": "string", "description": "Absolute path to the directory to list."},
            "offset": {"type": "number", "description": "The entry number to start listing from. Must be 1 or greater."},
            "limit": {"type": "number", "description": "The maximum number of entries to return."},
            "depth": {"type": "number", "description": "The maximum directory depth to traverse. Must be 1 or greater."},
        },
        "required": ["dir_path"],
        "additionalProperties": False,
    },
)


@dataclass(frozen=True, slots=True)
class Entry:
    key: str  # relative path with "/" separators (cut to MAX_NAME_BYTES): the listing order
    name: str  # the last component, shown
    depth: int  # components above it, below the listed directory
    suffix: str  # "/" directory, "@" symlink, "?" other, "" file


class ListDir:
    spec = SPEC

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        offset = whole_number(args, "offset", 1)
        limit = whole_number(args, "limit", DEFAULT_LIMIT)
        depth = whole_number(args, "depth", DEFAULT_DEPTH)
        if offset == 0:
            raise ToolError("offset must be a 1-indexed entry number")
        if limit == 0:
            raise ToolError("limit must be greater than zero")
        if depth == 0:
            raise ToolError("depth must be greater than zero")
        if not args["dir_path"]:
            raise ToolError("dir_path must not be empty")
        path = resolve(ctx.cwd, args["dir_path"])
        timeout_s = min(ctx.timeout_s, WALK_TIMEOUT_S)
        hidden = hidden_paths(ctx.sandbox)
        lines = await off_loop(lambda budget: list_entries(path, offset, limit, depth, budget, hidden), timeout_s, "list_dir")
        return ToolResult("\n".join([f"Absolute path: {path}", *lines]))


def list_entries(path: Path, offset: int, limit: int, depth: int, budget: Budget, hidden: HiddenPaths = NOTHING_HIDDEN) -> list[str]:
    """The formatted page of entries (runs in a worker thread). A directory the thread's
    sandbox ``hidden`` is refused, and shown empty where the walk meets it (as its commands
    see it)."""
    try:
        with os.scandir(path):
            pass
    except OSError as exc:
        raise ToolError(f"failed to read directory: {os_error_text(exc)}") from None
    roots = hidden_roots(hidden)
    refuse_hidden(path, roots, what="list")
    counter = [0]
    first = heapq.nsmallest(offset - 1 + limit, _walk(path, depth, budget, counter, roots), key=lambda entry: entry.key)
    total = counter[0]
    if total == 0:
        return []
    if offset > total:
        raise ToolError("offset exceeds directory entry count")
    page = first[offset - 1 :]
    lines = [f"{INDENT * entry.depth}{entry.name}{entry.suffix}" for entry in page]
    if offset - 1 + len(page) < total:
        lines.append(f"More than {len(page)} entries found")
    return lines


def _walk(root: Path, depth: int, budget: Budget, counter: list[int], hidden: HiddenPaths = NOTHING_HIDDEN) -> Iterator[Entry]:
    """Every entry within ``depth`` levels, breadth first; unreadable and ``hidden``
    subdirectories are leaves."""
    queue: deque[tuple[str, str, int]] = deque([(str(root), "", depth)])
    while queue:
        directory, prefix, remaining = queue.popleft()
        if hidden and prefix and is_hidden(os.path.realpath(directory), hidden):
            continue
        level = prefix.count("/") + 1 if prefix else 0
        try:
            with os.scandir(directory) as listing:
                children = list(listing)
        except OSError:
            continue
        budget.check()
        for child in children:
            relative = f"{prefix}/{child.name}" if prefix else child.name
            suffix = _suffix(child)
            if suffix == "/" and remaining > 1:
                queue.append((child.path, relative, remaining - 1))
            counter[0] += 1
            key = lossy_prefix(os.fsencode(relative), MAX_NAME_BYTES)
            yield Entry(key, lossy_prefix(os.fsencode(child.name), MAX_NAME_BYTES), level, suffix)


def _suffix(entry: os.DirEntry[str]) -> str:
    try:
        if entry.is_symlink():
            return "@"
        if entry.is_dir(follow_symlinks=False):
            return "/"
        if entry.is_file(follow_symlinks=False):
            return ""
    except OSError:
        pass
    return "?"

