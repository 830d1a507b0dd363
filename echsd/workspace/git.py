"""Running ``git``: every piece of echsd's git work is one call of the ``git`` command.

Going through the command (not a library) means the user's git config, hooks, attributes
and LFS filters apply as they do for the user. Each call is a child process awaited by trio:
nothing of it runs on the event loop but reading its pipes, and what a call may print is
bounded (``limit``: more is cut and the process killed, so a huge diff costs its first
bytes only). Errors say what went wrong in one line: git missing, not a repository, or
the command's own message.

echsd adds to git's environment only what it must: no terminal prompts, no optional locks
for reads (``git status`` must not rewrite the user's index), and none of the inherited
``GIT_DIR``-like variables, which would point every call at some other repository.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from typing import Mapping, Sequence

import trio

from echsd.errors import Conflict, EchsError, Internal, InvalidState, Unavailable

GIT_TIMEOUT_S = 120.0  # one git call; a hook or a filter that hangs fails the call, not the thread
ERR_BYTES = 16_384  # of a call's stderr, kept for its error message
CHUNK = 65_536

# Inherited variables that would make git work on another repository, index or object store.
_LOCATION_VARIABLES = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
    "GIT_QUARANTINE_PATH",
)

ECHSD_IDENTITY = {
    "GIT_AUTHOR_NAME": "echsd",
    "GIT_AUTHOR_EMAIL": "echsd@localhost",
    "GIT_COMMITTER_NAME": "echsd",
    "GIT_COMMITTER_EMAIL": "echsd@localhost",
}


class GitMissing(Unavailable):
    """No ``git`` command on the daemon's PATH."""


class NotARepository(InvalidState):
    """The directory is in no git work tree."""


class GitFailed(Internal):
    """A git command failed; the message is git's own."""


class MergeConflict(Conflict):
    """A merge would conflict (or would overwrite uncommitted changes); nothing was changed."""

    def __init__(self, message: str, files: Sequence[str]) -> None:
        super().__init__(message)
        self.files = list(files)


@dataclass(frozen=True, slots=True)
class GitResult:
    code: int
    out: bytes
    err: str
    truncated: bool = False  # ``out`` was cut at the call's ``limit``

    @property
    def text(self) -> str:
        return self.out.decode("utf-8", "replace").strip()

    def lines(self) -> list[str]:
        return [line for line in self.text.splitlines() if line]

    def fields(self) -> list[str]:
        """NUL-separated output (``-z``) as strings."""
        return [part.decode("utf-8", "surrogateescape") for part in self.out.split(b"\0") if part]


def git_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    environ = {key: value for key, value in os.environ.items() if key not in _LOCATION_VARIABLES}
    environ["GIT_TERMINAL_PROMPT"] = "0"
    environ.setdefault("GIT_EDITOR", "true")  # a merge never waits for an editor
    if extra:
        environ.update(extra)
    return environ


async def git(
    args: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    limit: int | None = None,
    ok: Sequence[int] = (0,),
    timeout_s: float = GIT_TIMEOUT_S,
) -> GitResult:
    """Run ``git ARGS`` in ``cwd``; raises ``GitFailed`` unless its exit code is in ``ok``.

    ``limit``: keep at most this many bytes of stdout; past it the result is ``truncated``
    and git is stopped (the caller wanted a bounded answer, not the rest).
    """
    command = ["git", *args]
    try:
        process = await trio.lowlevel.open_process(
            command,
            cwd=cwd,
            env=git_environment(env),
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except FileNotFoundError as exc:
        if exc.filename == cwd or not os.path.isdir(cwd):
            raise NotARepository(f"{cwd} does not exist") from None
        raise GitMissing("git is not installed (no `git` command on the daemon's PATH): worktrees, turn diffs and undo need it") from None
    except NotADirectoryError:
        raise NotARepository(f"{cwd} is not a directory") from None
    out = bytearray()
    err = bytearray()
    truncated = False

    async def read_out() -> None:
        nonlocal truncated
        assert process.stdout is not None
        while True:
            chunk = await process.stdout.receive_some(CHUNK)
            if not chunk:
                return
            if limit is not None and len(out) + len(chunk) > limit:
                out.extend(chunk[: limit - len(out)])
                truncated = True
                process.kill()  # the rest is not wanted
                return
            out.extend(chunk)

    async def read_err() -> None:
        assert process.stderr is not None
        while True:
            chunk = await process.stderr.receive_some(CHUNK)
            if not chunk:
                return
            err.extend(chunk)
            if len(err) > ERR_BYTES:
                del err[: len(err) - ERR_BYTES]

    async def write_in() -> None:
        assert process.stdin is not None
        try:
            await process.stdin.send_all(stdin or b"")
        except trio.BrokenResourceError:
            pass  # git stopped reading (it failed): its exit code says why
        finally:
            await process.stdin.aclose()

    try:
        with trio.move_on_after(timeout_s) as timer:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(read_out)
                nursery.start_soon(read_err)
                if stdin is not None:
                    nursery.start_soon(write_in)
            code = await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
            with trio.CancelScope(shield=True):
                await process.wait()
    message = err.decode("utf-8", "replace").strip()
    if timer.cancelled_caught:
        raise GitFailed(f"git {args[0]} did not finish within {timeout_s:g} s (a hook or a filter waiting?) in {cwd}")
    if truncated:
        return GitResult(code, bytes(out), message, truncated=True)
    if code not in ok:
        raise GitFailed(f"git {' '.join(_shown(args))} failed in {cwd}: {_last_lines(message) or f'exit status {code}'}")
    return GitResult(code, bytes(out), message)


def _shown(args: Sequence[str]) -> list[str]:
    """The command as an error names it: long argument lists cut short."""
    shown = [arg if len(arg) <= 80 else arg[:77] + "..." for arg in args[:6]]
    return shown + (["..."] if len(args) > 6 else [])


def _last_lines(message: str, count: int = 3) -> str:
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    return "; ".join(lines[-count:])


def is_failure(exc: BaseException) -> bool:
    """Whether ``exc`` is one of git's failures (kept as a note, not a crash, where git is
    an extra: a turn's snapshot, its diff)."""
    return isinstance(exc, EchsError) and isinstance(exc, (GitMissing, NotARepository, GitFailed))
