"""What changed between two snapshots, within a thread's cwd: paths, a diff stat and a
unified diff bounded in bytes (git writes it; echsd reads its first ``limit`` bytes)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from echsd.workspace.git import git
from echsd.workspace.repo import Repo

DIFF_OPTIONS = ("--no-color", "--no-ext-diff", "--no-renames", "--relative")


@dataclass(frozen=True, slots=True)
class Stat:
    files: int = 0
    insertions: int = 0
    deletions: int = 0

    def to_dict(self) -> dict[str, int]:
        return {"files": self.files, "insertions": self.insertions, "deletions": self.deletions}

    def line(self) -> str:
        """``3 files changed, 10 insertions(+), 2 deletions(-)``, as git says it."""
        files = f"{self.files} file{'' if self.files == 1 else 's'} changed"
        return f"{files}, {self.insertions} insertion{'' if self.insertions == 1 else 's'}(+), {self.deletions} deletion{'' if self.deletions == 1 else 's'}(-)"


@dataclass(frozen=True, slots=True)
class Changes:
    paths: list[str]  # relative to the cwd, in git's order
    diff: str
    truncated: bool
    stat: Stat = field(default_factory=Stat)

    def to_dict(self) -> dict[str, Any]:
        return {"paths": self.paths, "diff": self.diff, "truncated": self.truncated, "stat": self.stat.to_dict()}


async def changed_paths(repo: Repo, old: str, new: str, paths: Sequence[str] = ()) -> tuple[list[str], Stat]:
    """The paths under the cwd that differ between ``old`` and ``new`` (trees or commits),
    and the stat of those changes."""
    result = await git(["diff", "--numstat", "-z", *DIFF_OPTIONS, old, new, "--", *paths], cwd=repo.cwd)
    changed: list[str] = []
    insertions = deletions = 0
    for record in result.fields():
        added, removed, path = record.split("\t", 2)
        changed.append(path)
        insertions += int(added) if added.isdigit() else 0
        deletions += int(removed) if removed.isdigit() else 0
    return changed, Stat(len(changed), insertions, deletions)


async def changes(repo: Repo, old: str, new: str, limit: int) -> Changes | None:
    """What ``new`` changed against ``old`` within the cwd; None when nothing did. The
    diff holds at most ``limit`` bytes, then a marker saying it was cut."""
    paths, stat = await changed_paths(repo, old, new)
    if not paths:
        return None
    result = await git(["diff", *DIFF_OPTIONS, old, new], cwd=repo.cwd, limit=limit)
    text = result.out.decode("utf-8", "replace")
    if result.truncated:
        text = text[: text.rfind("\n") + 1] if "\n" in text else text
        text += f"[echsd: the diff is cut here, at {limit:,} bytes; `git diff {old[:12]} {new[:12]}` shows all of it]\n"
    return Changes(paths, text, result.truncated, stat)
