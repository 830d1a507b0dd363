"""grep_files without ripgrep: the same walk, filters and matching, in Python.

What ripgrep does by default, and so what this does: skip hidden files and directories;
honour ``.gitignore`` (inside a git repository only), ``.git/info/exclude`` and the global
git excludes file, plus ``.ignore`` and ``.rgignore`` anywhere, in the searched
directories and their parents, with ripgrep's precedence; never follow symlinks below the
searched path; let an include glob override all of that for the files it names. A file
is read 64 KiB at a time, like ripgrep's line buffer: a NUL byte makes it binary and ends
its search (a match must come before the block holding the NUL); a UTF-16 file with a BOM
is decoded; the pattern matches within one line. A file named directly as the search path
is searched whole, binary or not, as ripgrep searches explicit paths.
"""

from __future__ import annotations

import codecs
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Iterator

from echsd.tools.fsaccess import Budget, open_regular
from echsd.tools.ignore_rules import IncludeGlobs, Rules, Verdict

BLOCK = 64 * 1024
_EXCLUDES_FILE = re.compile(r'^\s*excludesfile\s*=\s*"?\s*(\S+?)\s*"?\s*$', re.IGNORECASE | re.MULTILINE)


@dataclass(frozen=True)
class DirRules:
    """The ignore rules one directory contributes."""

    custom: Rules | None  # .rgignore
    ignore: Rules | None  # .ignore
    git: Rules | None  # .gitignore
    exclude: Rules | None  # <git dir>/info/exclude, only where .git is
    has_git: bool


@dataclass(frozen=True)
class Frame:
    directory: str
    rules: DirRules
    parent: "Frame | None"  # the next directory up, within the walk


def walk_matches(
    root: str, regex: re.Pattern[str], include: IncludeGlobs | None, cwd: str, budget: Budget
) -> Iterator[str]:
    """Paths under ``root`` (a directory or a file) whose contents match, in walk order.

    ``cwd`` is where ripgrep would run: the global excludes file is relative to it.
    """
    if not os.path.isdir(root):
        if _file_matches(root, regex, explicit=True, budget=budget):
            yield root
        return
    filters = _Filters(root, include, cwd)
    stack = [Frame(root, _dir_rules(root), None)]
    while stack:
        frame = stack.pop()
        try:
            with os.scandir(frame.directory) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError:
            continue
        for entry in entries:
            budget.check()
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
                is_file = entry.is_file(follow_symlinks=False)
            except OSError:
                continue
            if (is_dir or is_file) and not filters.skip(entry.path, entry.name, is_dir, frame):
                if is_dir:
                    stack.append(Frame(entry.path, _dir_rules(entry.path), frame))
                elif _file_matches(entry.path, regex, explicit=False, budget=budget):
                    yield entry.path


class _Filters:
    """Ripgrep's verdict on one path: include globs, then ignore files, then hidden."""

    def __init__(self, root: str, include: IncludeGlobs | None, cwd: str) -> None:
        self.root = root
        self.include = include
        self.canonical_root = os.path.realpath(root)
        self.ancestors = _ancestor_rules(self.canonical_root)
        self.any_git_above = any(rules.has_git for _, rules in self.ancestors)
        self.global_rules = _global_rules(os.path.realpath(cwd))

    def skip(self, path: str, name: str, is_dir: bool, frame: Frame) -> bool:
        if self.include is not None:
            verdict = self.include.match(path, is_dir)
            if verdict is not None:
                return verdict is Verdict.IGNORE
        verdict = self._ignore_files(path, is_dir, frame)
        if verdict is None:
            return name.startswith(".")
        return verdict is Verdict.IGNORE

    def _ignore_files(self, path: str, is_dir: bool, frame: Frame) -> Verdict | None:
        chain: list[tuple[str, DirRules]] = []
        node: Frame | None = frame
        while node is not None:
            chain.append((path, node.rules))
            node = node.parent
        absolute = self.canonical_root + path[len(self.root) :]
        chain.extend((absolute, rules) for _, rules in self.ancestors)
        any_git = self.any_git_above or any(rules.has_git for _, rules in chain)
        found: dict[str, Verdict] = {}
        saw_git = False
        for candidate, rules in chain:
            sources = [("custom", rules.custom), ("ignore", rules.ignore)]
            if any_git and not saw_git:
                sources += [("git", rules.git), ("exclude", rules.exclude)]
            for kind, source in sources:
                if kind not in found and source is not None:
                    verdict = source.match(candidate, is_dir)
                    if verdict is not None:
                        found[kind] = verdict
            saw_git = saw_git or rules.has_git
        for kind in ("custom", "ignore", "git", "exclude"):
            if kind in found:
                return found[kind]
        if any_git and self.global_rules is not None:
            return self.global_rules.match(path, is_dir)
        return None


def _dir_rules(directory: str) -> DirRules:
    git_path = os.path.join(directory, ".git")
    has_git = os.path.exists(git_path) or os.path.exists(os.path.join(directory, ".jj"))
    exclude = None
    if os.path.exists(git_path):
        git_dir = _git_common_dir(directory, git_path)
        if git_dir is not None:
            exclude = _read_rules(directory, os.path.join(git_dir, "info", "exclude"))
    return DirRules(
        custom=_read_rules(directory, os.path.join(directory, ".rgignore")),
        ignore=_read_rules(directory, os.path.join(directory, ".ignore")),
        git=_read_rules(directory, os.path.join(directory, ".gitignore")),
        exclude=exclude,
        has_git=has_git,
    )


def _ancestor_rules(canonical_root: str) -> list[tuple[str, DirRules]]:
    """Rules of the directories above the searched one, nearest first."""
    found = []
    current = Path(canonical_root)
    for parent in current.parents:
        found.append((str(parent), _dir_rules(str(parent))))
    return found


def _git_common_dir(directory: str, git_path: str) -> str | None:
    """The git directory whose ``info/exclude`` applies (worktrees share their main one's)."""
    if os.path.isdir(git_path):
        return git_path
    try:
        text = Path(git_path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    git_dir = os.path.join(directory, text[len("gitdir:") :].strip())
    try:
        common = Path(git_dir, "commondir").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return git_dir
    return os.path.join(git_dir, common)


def _read_rules(root: str, path: str) -> Rules | None:
    try:
        with open(path, "rb") as handle:
            text = handle.read(4 << 20).decode("utf-8", "replace")
    except OSError:
        return None
    rules = Rules.from_text(root, text)
    return rules if rules.rules else None


def _global_rules(cwd: str) -> Rules | None:
    """The global git excludes file, found as ripgrep finds it, its patterns relative to cwd."""
    home = os.environ.get("HOME", "")
    xdg = os.environ.get("XDG_CONFIG_HOME") or (os.path.join(home, ".config") if home else "")
    configs = [
        os.environ.get("GIT_CONFIG_GLOBAL", ""),
        os.path.join(home, ".gitconfig") if home else "",
        os.path.join(xdg, "git", "config") if xdg else "",
        os.environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig",
    ]
    path = os.path.join(xdg, "git", "ignore") if xdg else None
    for config in filter(None, configs):
        try:
            with open(config, "rb") as handle:
                match = _EXCLUDES_FILE.search(handle.read(1 << 20).decode("utf-8", "replace"))
        except OSError:
            continue
        if match:
            path = match.group(1).replace("~", home) if home else match.group(1)
            break
    return _read_rules(cwd, path) if path else None


def _file_matches(path: str, regex: re.Pattern[str], explicit: bool, budget: Budget) -> bool:
    try:
        fd = open_regular(Path(path))
    except OSError:
        return False
    with os.fdopen(fd, "rb", buffering=0) as handle:
        try:
            return _stream_matches(handle, regex, explicit, budget)
        except OSError:
            return False


def _stream_matches(handle: BinaryIO, regex: re.Pattern[str], explicit: bool, budget: Budget) -> bool:
    first = handle.read(BLOCK)
    encoding, skip = _sniff_bom(first)
    decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
    pending = ""
    block = first[skip:]
    while True:
        text = decoder.decode(block, final=not block)
        if "\x00" in text:
            if not explicit:
                return False
            text = text.replace("\x00", "\n")
        text = pending + text
        if not block:
            return bool(text) and _lines_match(text, regex)
        cut = text.rfind("\n")
        if cut >= 0 and _lines_match(text[:cut], regex):
            return True
        pending = text[cut + 1 :]
        budget.check()
        block = handle.read(BLOCK)


def _lines_match(text: str, regex: re.Pattern[str]) -> bool:
    """Whether a line of ``text`` (lines joined by ``\\n``, no final one) matches.

    One search over the whole text finds candidates fast; a match must lie within a line,
    so a candidate spanning lines sends us line by line. ``regex`` is compiled MULTILINE,
    so ``^``/``$`` mean the same in both.
    """
    found = regex.search(text)
    if found is None:
        return False
    if "\n" not in found.group():
        return True
    return any(regex.search(line) for line in text.split("\n"))


def _sniff_bom(head: bytes) -> tuple[str, int]:
    if head.startswith(codecs.BOM_UTF8):
        return "utf-8", 3
    if head.startswith(codecs.BOM_UTF16_LE):
        return "utf-16-le", 2
    if head.startswith(codecs.BOM_UTF16_BE):
        return "utf-16-be", 2
    return "utf-8", 0

