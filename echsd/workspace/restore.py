"""Putting files back as a snapshot recorded them (``echs undo``), in the work tree only.

``git restore --worktree`` writes a file's recorded content (through the user's smudge
filters) and leaves the index alone; a file the snapshot does not have was created since,
and is deleted (with the directories it leaves empty). Paths are relative to the thread's
cwd and taken literally (a file named ``*.txt`` is that file, not a glob).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Sequence

import trio

from echsd.workspace.git import git
from echsd.workspace.repo import Repo

LITERAL = {"GIT_LITERAL_PATHSPECS": "1"}


@dataclass(slots=True)
class Restored:
    restored: list[str] = field(default_factory=list)  # written back as recorded
    removed: list[str] = field(default_factory=list)  # created since: deleted


def _nul(paths: Sequence[str]) -> bytes:
    return b"".join(path.encode("utf-8", "surrogateescape") + b"\0" for path in paths)


async def recorded_paths(repo: Repo, source: str, paths: Sequence[str]) -> set[str]:
    """Which of ``paths`` the snapshot ``source`` has."""
    if not paths:
        return set()
    found: set[str] = set()
    step = 1000  # paths per call: an argument list stays far below the kernel's limit
    for start in range(0, len(paths), step):
        batch = list(paths[start : start + step])
        result = await git(["ls-tree", "-r", "-z", "--name-only", source, "--", *batch], cwd=repo.cwd, env=LITERAL)
        found.update(result.fields())
    return found


async def restore(repo: Repo, source: str, paths: Sequence[str]) -> Restored:
    """Make each of ``paths`` (under the cwd) what ``source`` recorded: its content, or
    absent if it has none."""
    done = Restored()
    if not paths:
        return done
    present = await recorded_paths(repo, source, paths)
    written = [path for path in paths if path in present]
    if written:
        await git(
            ["restore", f"--source={source}", "--worktree", "--pathspec-from-file=-", "--pathspec-file-nul"],
            cwd=repo.cwd,
            env=LITERAL,
            stdin=_nul(written),
        )
    done.restored = written
    done.removed = await trio.to_thread.run_sync(_remove, repo.cwd, [path for path in paths if path not in present])
    return done


def _remove(cwd: str, paths: list[str]) -> list[str]:
    removed = []
    root = os.path.realpath(cwd)
    for path in paths:
        full = os.path.join(cwd, path)
        try:
            os.unlink(full)
        except FileNotFoundError:
            pass
        except IsADirectoryError:
            continue  # a directory now stands where the file was: not ours to delete
        removed.append(path)
        parent = os.path.dirname(os.path.realpath(full))
        while parent.startswith(root + os.sep):
            try:
                os.rmdir(parent)  # only if empty
            except OSError:
                break
            parent = os.path.dirname(parent)
    return removed
