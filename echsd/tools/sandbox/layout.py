"""Where a policy lets a command write, worked out from the filesystem as it is now.

``layout(policy)`` resolves the writable roots (real paths, symlinks followed), finds the
cwd's git repository (its git dir, and the common dir of a worktree, which may live outside
the cwd: commits write there) and lists what must stay read-only beneath the writable
roots: the repository's hooks and config (git runs what they name, later, outside any
sandbox), also its submodules' (``modules/*/hooks``, ``config``) and its other worktrees'
``config.worktree``, a worktree's ``.git`` file (which says where that config lives), and
the ``.git`` of any other repository at the top of a writable root. The daemon's paths stay
hidden; a hidden directory holding a writable root (a thread's worktree under the state
directory) is hidden around it, entry by entry. The launcher turns a layout into kernel
rules in the child; the file tools ask ``may_write`` of the same layout, so both agree.
Only ``stat``/``readlink``-level work: cheap, but it touches the disk, so callers run it
off the event loop (the launcher runs it in the child).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from echsd.tools.sandbox.policy import READ_ONLY, SandboxPolicy

MAX_NESTED = 256  # submodule git dirs and worktrees looked at in one repository

# Writable for every confined command: the usual sinks and sources of a shell.
DEVICES_RW = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty")
DEVICES_RO = ("/dev/random", "/dev/urandom")


@dataclass(frozen=True)
class Repository:
    git_dir: str  # .git, or .git/worktrees/NAME for a worktree
    common_dir: str  # the directory holding objects, refs, hooks and config
    dot_git: str  # the cwd's (or an ancestor's) .git: a directory, or a worktree's file


@dataclass(frozen=True)
class Layout:
    writable: tuple[str, ...]  # directories where anything may be written (beneath them too)
    readonly: tuple[str, ...]  # beneath writable ones, kept read-only (hooks dirs first, maybe missing)
    pinned: tuple[str, ...]  # made mount points, so they cannot be renamed or replaced
    hidden: tuple[str, ...]  # covered: the command cannot see them at all
    repository: Repository | None

    def may_write(self, path: str) -> bool:
        """Whether the sandbox lets a file at ``path`` be created or changed (``path`` is
        resolved: symlinks followed where they exist)."""
        real = os.path.realpath(path)
        if any(beneath(real, root) for root in (*self.hidden, *self.readonly)):
            return False
        return any(beneath(real, root) for root in self.writable)


def beneath(path: str, root: str) -> bool:
    """Whether ``path`` is ``root`` or lies under it (both real paths)."""
    return path == root or path.startswith(root.rstrip("/") + "/")


def find_repository(start: str) -> Repository | None:
    """The git repository ``start`` is in, found as git finds it: the nearest ``.git``
    above, a directory or a ``gitdir:`` file (worktrees, submodules)."""
    directory = os.path.realpath(start)
    while True:
        dot_git = os.path.join(directory, ".git")
        git_dir = _git_dir_of(dot_git)
        if git_dir is not None:
            common = git_dir
            try:
                with open(os.path.join(git_dir, "commondir")) as file:
                    common = os.path.realpath(os.path.join(git_dir, file.read().strip()))
            except OSError:
                pass
            return Repository(git_dir, common, dot_git)
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def _git_dir_of(dot_git: str) -> str | None:
    if os.path.isdir(dot_git):
        return os.path.realpath(dot_git)
    if not os.path.isfile(dot_git):
        return None
    try:
        with open(dot_git) as file:
            first = file.readline(4096).strip()
    except OSError:
        return None
    if not first.startswith("gitdir:"):
        return None
    target = os.path.join(os.path.dirname(dot_git), first[len("gitdir:") :].strip())
    return os.path.realpath(target) if os.path.isdir(target) else None


def _narrowed(hidden: list[str], roots: list[str]) -> tuple[str, ...]:
    """The hidden paths, a hidden directory that holds a writable root (a thread's worktree
    under the daemon's state directory) replaced by its other entries, level by level down
    to the root: the root stays visible, everything else of the directory stays hidden."""
    found: list[str] = []
    pending = list(hidden)
    while pending:
        path = pending.pop(0)
        inside = [root for root in roots if root != path and beneath(root, path)]
        if not inside or not os.path.isdir(path) or os.path.islink(path):
            found.append(path)  # the cwd itself hidden stays hidden: narrowing is for what lies beneath
            continue
        try:
            entries = sorted(os.listdir(path))
        except OSError:
            continue
        for entry in entries:
            child = os.path.join(path, entry)
            if any(root == child for root in inside):
                continue  # the root itself: visible
            pending.append(child)
    return tuple(found)


def layout(policy: SandboxPolicy) -> Layout:
    found = sorted({os.path.realpath(path) for path in policy.hidden if os.path.lexists(path)})
    outermost = [path for path in found if not any(path != other and beneath(path, other) for other in found)]
    visible = [os.path.realpath(root) for root in (policy.cwd, *policy.writable_roots)]
    hidden = _narrowed(outermost, visible)
    if policy.mode == READ_ONLY or not policy.confines_files:
        return Layout((), (), (), hidden, None)
    roots = [policy.cwd, *([policy.tmpdir] if policy.tmpdir else []), *policy.writable_roots]
    writable = [os.path.realpath(root) for root in roots if os.path.isdir(root)]
    readonly: list[str] = []
    hooks: list[str] = []
    pinned: list[str] = []
    repository = find_repository(policy.cwd)
    if repository is not None:
        for directory in dict.fromkeys((repository.git_dir, repository.common_dir)):
            writable.append(directory)
            pinned.append(directory)
            hooks.append(os.path.join(directory, "hooks"))
            readonly += [os.path.join(directory, name) for name in ("config", "config.worktree")]
        if os.path.isfile(repository.dot_git):
            readonly.append(repository.dot_git)  # a worktree's pointer to its git dir
        module_dirs, worktree_configs = _nested(repository.common_dir)
        for directory in module_dirs:
            hooks.append(os.path.join(directory, "hooks"))
            readonly += [os.path.join(directory, name) for name in ("config", "config.worktree")]
        readonly += worktree_configs
    own = {repository.git_dir, repository.common_dir} if repository is not None else set()
    for root in writable[:]:
        other = os.path.join(root, ".git")
        if os.path.lexists(other) and _git_dir_of(other) not in own:
            readonly.append(os.path.realpath(other))  # another repository: readable, not writable
    existing = [path for path in readonly if os.path.lexists(path)]
    return Layout(_unique(writable), _unique(hooks + existing), _unique(pinned), hidden, repository)


def _nested(common_dir: str) -> tuple[list[str], list[str]]:
    """The git dirs of a repository's submodules (``modules/NAME``, nested and with slashes
    in their names too) and its worktrees' ``config.worktree`` files: git runs what their
    hooks and config name as it does the repository's own."""
    modules: list[str] = []
    stack, looked = [os.path.join(common_dir, "modules")], 0
    while stack and len(modules) < MAX_NESTED and looked < 4 * MAX_NESTED:
        directory, looked = stack.pop(), looked + 1
        for name in _subdirectories(directory):
            path = os.path.join(directory, name)
            if os.path.isfile(os.path.join(path, "HEAD")):
                modules.append(path)
                stack.append(os.path.join(path, "modules"))
            else:
                stack.append(path)  # a submodule named a/b lives in modules/a/b
    worktrees = []
    for directory in (common_dir, *modules):
        base = os.path.join(directory, "worktrees")
        worktrees += [os.path.join(base, name, "config.worktree") for name in _subdirectories(base)[:MAX_NESTED]]
    return modules, worktrees


def _subdirectories(directory: str) -> list[str]:
    try:
        with os.scandir(directory) as entries:
            return sorted(entry.name for entry in entries if entry.is_dir(follow_symlinks=False))
    except OSError:
        return []


def _unique(paths: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(paths))
