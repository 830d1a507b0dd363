"""What the read-only file tools share: argument coercion, path resolution, safe opening,
the sandbox's hidden paths, and running blocking file work off the event loop within a time
budget.

A confined thread's commands cannot see the daemon's own paths (its state directory with
the token, its sockets, the login it uses: ``SandboxPolicy.hidden``), so its file tools do
not read them either: ``hidden_roots`` resolves them, ``refuse_hidden`` judges an opened
file by what it really is (``/proc/self/fd``: no symlink can point past the check).

File systems block (slow disks, network mounts, huge trees), so every tool runs its IO in
a worker thread. A thread cannot be killed: the work checks a ``Budget`` as it goes and
stops when the call is cancelled (interrupt) or its time is up.
"""

from __future__ import annotations

import functools
import os
import stat
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, TypeVar

import trio

from echsd.tools.base import ToolError
from echsd.tools.sandbox.layout import beneath
from echsd.tools.sandbox.policy import SandboxPolicy

T = TypeVar("T")


def whole_number(args: dict[str, Any], name: str, default: int) -> int:
    """A count or index argument: the schema says "number", models send integers (or 10.0)."""
    value = args.get(name)
    if value is None:
        return default
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ToolError(f"{name} must be a non-negative integer, got {value!r}")
    return value


def resolve(cwd: Path, raw: str) -> Path:
    """An argument path: absolute as given, relative ones against the thread's cwd."""
    if "\x00" in raw:
        raise ToolError("path contains a NUL character")
    path = Path(raw).expanduser()
    return path if path.is_absolute() else cwd / path


@dataclass(frozen=True)
class HiddenPaths:
    """The paths a thread's sandbox hides from its commands, and the thread's own roots (its
    cwd, its writable roots) that stay visible beneath them: a worktree thread's cwd lies in
    the daemon's state directory, and its commands see it (``layout._narrowed``)."""

    hidden: tuple[str, ...] = ()
    visible: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.hidden)

    def covers(self, real: str) -> bool:
        """Whether the real path ``real`` is hidden (both sets resolved: ``hidden_roots``)."""
        for root in self.hidden:
            if beneath(real, root) and not any(seen != root and beneath(seen, root) and beneath(real, seen) for seen in self.visible):
                return True
        return False


NOTHING_HIDDEN = HiddenPaths()


def hidden_paths(policy: SandboxPolicy | None) -> HiddenPaths:
    """The paths a thread's sandbox hides from its commands (none when nothing confines them)."""
    if policy is None or not policy.confined or not policy.hidden:
        return NOTHING_HIDDEN
    return HiddenPaths(policy.hidden, (policy.cwd, *policy.writable_roots))


def hidden_roots(hidden: HiddenPaths) -> HiddenPaths:
    """``hidden`` as real paths (blocking: call it in the worker thread)."""
    if not hidden:
        return NOTHING_HIDDEN
    return HiddenPaths(tuple(os.path.realpath(path) for path in hidden.hidden), tuple(os.path.realpath(path) for path in hidden.visible))


def is_hidden(real: str, roots: HiddenPaths) -> bool:
    return roots.covers(real)


def refuse_hidden(shown: Path | str, roots: HiddenPaths, *, fd: int | None = None, what: str = "read") -> None:
    """ToolError if ``shown`` (or the file open as ``fd``) is one of the daemon's hidden paths."""
    if not roots:
        return
    real = os.readlink(f"/proc/self/fd/{fd}") if fd is not None else os.path.realpath(shown)
    if is_hidden(real, roots):
        raise ToolError(
            f"cannot {what} `{shown}`: it is the daemon's own (its state, sockets or login), which the thread's "
            "sandbox hides from its commands and file tools alike"
        )


def os_error_text(exc: OSError) -> str:
    """``No such file or directory (os error 2)``: the form Codex's messages carry."""
    if exc.errno is None:
        return exc.strerror or str(exc)
    return f"{exc.strerror or os.strerror(exc.errno)} (os error {exc.errno})"


def lossy_prefix(raw: bytes, max_bytes: int) -> str:
    """``raw`` as text (invalid UTF-8 as U+FFFD) cut to ``max_bytes`` bytes at a character boundary."""
    text = raw[: max_bytes + 4].decode("utf-8", "replace")
    encoded = text.encode("utf-8")
    if len(encoded) <= max_bytes:
        return text
    return encoded[:max_bytes].decode("utf-8", "ignore")


def open_regular(path: Path) -> int:
    """Open a regular file for reading; never blocks on a FIFO or device before the check.

    Raises ``OSError`` (EISDIR for a directory, ENODEV-like text for other special files).
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(21, os.strerror(21))
        if not stat.S_ISREG(mode):
            raise OSError(None, "not a regular file")
        os.set_blocking(fd, True)
        return fd
    except BaseException:
        os.close(fd)
        raise


class Budget:
    """Time and cancellation for work running in a thread; ``check()`` from loops."""

    def __init__(self, timeout_s: float, what: str) -> None:
        self.timeout_s = timeout_s
        self.what = what
        self.deadline = time.monotonic() + timeout_s
        self.stopped = threading.Event()

    def check(self) -> None:
        if self.stopped.is_set():
            raise ToolError(f"{self.what} was cancelled")
        if time.monotonic() > self.deadline:
            raise ToolError(f"{self.what} timed out after {self.timeout_s:g} seconds")


async def off_loop(work: Callable[[Budget], T], timeout_s: float, what: str) -> T:
    """Run ``work(budget)`` in a thread; on cancellation tell it to stop and return at once."""
    budget = Budget(timeout_s, what)
    try:
        return await trio.to_thread.run_sync(functools.partial(work, budget), abandon_on_cancel=True)
    finally:
        budget.stopped.set()
