"""``grep_files``: which files contain a pattern, newest first, as Codex's grep_files answers.

Same arguments and output as Codex: ``pattern`` (a ripgrep regex, trimmed), ``include``
(a ripgrep ``--glob``), ``path`` (default: the thread's cwd), ``limit`` (default 100, at
most 2000); the answer is the matching paths, one per line, most recently modified first,
or ``No matches found.``. Codex runs ``rg --files-with-matches --sortr=modified``.

ripgrep runs when ``rg`` is on PATH (``--no-config``, so a user's ripgrep config cannot
change the answer); otherwise ``grep_walk.py`` does the same search in Python. Either way
the paths are then ordered here (modification time, newest first, ties by path), so both
give the same list in the same order, and ripgrep can search in parallel.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import trio

from echsd.tools import strays
from echsd.tools.base import ToolContext, ToolError, ToolResult, ToolSpec
from echsd.tools.fsaccess import NOTHING_HIDDEN, Budget, HiddenPaths, hidden_paths, hidden_roots, is_hidden, off_loop, os_error_text, refuse_hidden, resolve, whole_number
from echsd.tools.grep_walk import walk_matches
from echsd.tools.ignore_rules import GlobError, IncludeGlobs
from echsd.tools.process import command_env
from echsd.tools.rust_regex import RegexError, translate

DEFAULT_LIMIT = 100
MAX_LIMIT = 2000
SEARCH_TIMEOUT_S = 30.0
MAX_MATCHED_FILES = 200_000  # paths gathered before ordering; past it the call fails clearly
MAX_STDERR_BYTES = 16 * 1024
NO_MATCHES = "No matches found."

SPEC = ToolSpec(
    name="grep_files",
    description="Finds files whose contents match the pattern and lists them by modification time.",
    parameters={
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Regular expression pattern to search for."},
            "include": {
                "type": "string",
                "description": 'Optional glob that limits which files are searched (e.g. "*.rs" or "*.{ts,tsx}").',
            },
            "path": {
                "type": "string",
                "description": "Directory or file path to search. Defaults to the session's working directory.",
            },
            "limit": {"type": "number", "description": "Maximum number of file paths to return (defaults to 100)."},
        },
        "required": ["pattern"],
        "additionalProperties": False,
    },
)


class GrepFiles:
    spec = SPEC

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        pattern = args["pattern"].strip()
        if not pattern:
            raise ToolError("pattern must not be empty")
        limit = whole_number(args, "limit", DEFAULT_LIMIT)
        if limit == 0:
            raise ToolError("limit must be greater than zero")
        search_path = os.path.normpath(resolve(ctx.cwd, args.get("path") or "."))
        include = (args.get("include") or "").strip() or None
        timeout_s = min(ctx.timeout_s, SEARCH_TIMEOUT_S)
        hidden = hidden_paths(ctx.sandbox)
        await off_loop(lambda _: _check_paths(search_path, ctx.cwd, hidden), timeout_s, "grep_files")
        rg = shutil.which("rg")
        if rg is not None:
            found = await ripgrep(rg, pattern, include, search_path, ctx.cwd, timeout_s)
        else:
            found = await off_loop(lambda budget: python_search(pattern, include, search_path, ctx.cwd, budget), timeout_s, "grep_files")
        ordered = await off_loop(lambda budget: newest_first(found, budget, hidden), timeout_s, "grep_files")
        searcher = "rg" if rg is not None else "python"
        if not ordered:
            return ToolResult(NO_MATCHES, ok=False, meta={"searcher": searcher})
        return ToolResult("\n".join(ordered[: min(limit, MAX_LIMIT)]), meta={"searcher": searcher})


def _check_paths(path: str, cwd: Path, hidden: HiddenPaths = NOTHING_HIDDEN) -> None:
    """The search path must exist, and the cwd too: ripgrep runs there and globs are relative
    to it. Not one the thread's sandbox ``hidden``."""
    try:
        os.stat(path)
    except OSError as exc:
        raise ToolError(f"unable to access `{path}`: {os_error_text(exc)}") from None
    refuse_hidden(path, hidden_roots(hidden), what="search")
    if not os.path.isdir(cwd):
        raise ToolError(f"the working directory `{cwd}` is not an existing directory")


async def ripgrep(rg: str, pattern: str, include: str | None, search_path: str, cwd: Path, timeout_s: float) -> list[str]:
    """Matching paths as ripgrep lists them (its order, unsorted)."""
    argv = [rg, "--no-config", "--files-with-matches", "--no-messages", "--regexp", pattern]
    if include is not None:
        argv += ["--glob", include]
    argv += ["--", search_path]
    try:
        with strays.starting():  # the daemon's own helper, not a command that escaped
            process = await trio.lowlevel.open_process(
                argv, cwd=str(cwd), env=command_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
            )
            strays.daemon_helper(process.pid)
    except OSError as exc:
        raise ToolError(f"failed to launch ripgrep at `{rg}`: {os_error_text(exc)}") from None
    out, err = bytearray(), bytearray()
    overflow = trio.CancelScope()
    try:
        with trio.move_on_after(timeout_s) as timer, overflow:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_drain_paths, process.stdout, out, overflow)
                nursery.start_soon(_drain_head, process.stderr, err)
                await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
        with trio.CancelScope(shield=True):
            await process.wait()
            for stream in (process.stdout, process.stderr):
                if stream is not None:
                    await stream.aclose()
    if overflow.cancelled_caught:
        raise ToolError(_too_many())
    if timer.cancelled_caught:
        raise ToolError(f"rg timed out after {timeout_s:g} seconds")
    if process.returncode == 1 or (process.returncode == 2 and not out and not err):
        return []
    if process.returncode not in (0, 2) or (not out and err):
        raise ToolError(f"rg failed: {err.decode('utf-8', 'replace').strip()}")
    paths = []
    for line in bytes(out).split(b"\n"):
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            continue  # a path that is not UTF-8 cannot be named to the model (Codex skips it too)
        if text:
            paths.append(text)
    return paths


async def _drain_paths(stream: trio.abc.ReceiveStream | None, into: bytearray, overflow: trio.CancelScope) -> None:
    """Read ripgrep's path list; stop everything once it names too many files."""
    lines = 0
    while stream is not None and (chunk := await stream.receive_some(65536)):
        into += chunk
        lines += chunk.count(b"\n")
        if lines > MAX_MATCHED_FILES:
            overflow.cancel()
            return


async def _drain_head(stream: trio.abc.ReceiveStream | None, into: bytearray) -> None:
    """Read a pipe to its end, keeping its first ``MAX_STDERR_BYTES``."""
    while stream is not None and (chunk := await stream.receive_some(65536)):
        if len(into) < MAX_STDERR_BYTES:
            into += chunk[: MAX_STDERR_BYTES - len(into)]


def python_search(pattern: str, include: str | None, search_path: str, cwd: Path, budget: Budget) -> list[str]:
    """Matching paths found by the Python walk (runs in a worker thread)."""
    try:
        regex = re.compile(translate(pattern), re.MULTILINE)
    except (RegexError, re.error) as exc:
        raise ToolError(f"invalid regex {pattern!r}: {exc}") from None
    globs = None
    if include is not None:
        try:
            globs = IncludeGlobs(os.path.realpath(cwd), [include])
        except GlobError as exc:
            raise ToolError(f"invalid include glob: {exc}") from None
    found = []
    for path in walk_matches(search_path, regex, globs, str(cwd), budget):
        if _nameable(path):
            found.append(path)
            if len(found) > MAX_MATCHED_FILES:
                raise ToolError(_too_many())
    return found


def newest_first(paths: list[str], budget: Budget, hidden: HiddenPaths = NOTHING_HIDDEN) -> list[str]:
    """``paths`` by modification time, newest first, ties by path; vanished ones dropped, and
    those the thread's sandbox ``hidden`` (a match there must not even be told)."""
    roots = hidden_roots(hidden)
    stamped = []
    for index, path in enumerate(paths):
        if index % 1024 == 0:
            budget.check()
        if roots and is_hidden(os.path.realpath(path), roots):
            continue
        try:
            stamped.append((-os.stat(path).st_mtime_ns, path))
        except OSError:
            continue
    stamped.sort()
    return [path for _, path in stamped]


def _nameable(path: str) -> bool:
    """Whether ripgrep's output line for ``path`` would be this path (UTF-8, one line)."""
    if "\n" in path:
        return False
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _too_many() -> str:
    return f"more than {MAX_MATCHED_FILES} files match; narrow the pattern, the path or the include glob"
