"""What turn snapshots cost a turn (issue 22), beside what git itself needs for them.

A thread whose cwd is in a git repository is snapshotted at each turn's start and end, and
a turn that changed files gets its diff; a thread elsewhere pays nothing of it. Variants run
interleaved on the in-process daemon (mock model), one turn each in turn, so both see the
same load; each turn writes one file with ``exec_command``:

- ``turn_plain``: a thread in a directory that is no repository;
- ``turn_repo``: a thread at the top of a repository of ``--files`` files (2,000 by default,
  in 40 directories), snapshots and ``turn.diff`` included.

``turn_overhead_p50_ms`` is their difference. The raw limit, measured in the same run with
no echsd at all: ``raw_git_p50_ms``, the git commands two snapshots and a diff are made of
(the index copied, ``git add --all`` into it, ``git write-tree``, ``git commit-tree``,
``git update-ref``, twice; ``git diff``), run back to back from this process. Options:
``--runs=N`` (default 40 turns of each), ``--files=N``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Awaitable, Callable

import trio

from bench.in_process import daemon_on_mock
from bench.interleave import interleaved, summaries

IDENTITY = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b"}


def _option(argv: list[str], name: str, default: int) -> int:
    for arg in argv:
        if arg.startswith(f"--{name}="):
            return int(arg.split("=", 1)[1])
    return default


def make_repo(path: Path, files: int) -> None:
    path.mkdir()
    for index in range(files):
        directory = path / f"dir{index % 40}"
        directory.mkdir(exist_ok=True)
        (directory / f"file{index}.txt").write_text(f"line {index}\n" * 40)
    env = {**os.environ, **IDENTITY}
    for command in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "files"]):
        subprocess.run(command, cwd=path, env=env, check=True, capture_output=True)


def raw_git(repo: Path, scratch: Path) -> float:
    """Two snapshots and a diff, as bare git commands (ms)."""
    env = {**os.environ, **IDENTITY, "GIT_INDEX_FILE": str(scratch / "index")}
    started = time.perf_counter()
    commits = []
    for _ in range(2):
        shutil.copyfile(repo / ".git" / "index", scratch / "index")
        subprocess.run(["git", "add", "--all", "--", "."], cwd=repo, env=env, check=True, capture_output=True)
        tree = subprocess.run(["git", "write-tree"], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout.strip()
        commit = subprocess.run(["git", "commit-tree", "-p", "HEAD", "-m", "raw", tree], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout.strip()
        subprocess.run(["git", "update-ref", "refs/bench/raw", commit], cwd=repo, env=env, check=True, capture_output=True)
        commits.append(commit)
    subprocess.run(["git", "diff", "--no-color", *commits], cwd=repo, check=True, capture_output=True)
    return (time.perf_counter() - started) * 1000


async def turns(runs: int, files: int) -> dict[str, Any]:
    from bench.bench_threads import directive

    with tempfile.TemporaryDirectory(prefix="echsd-bench-workspace-") as scratch:
        root = Path(scratch)
        state, plain, repo, raw = root / "state", root / "plain", root / "repo", root / "raw"
        for directory in (state, plain, raw):
            directory.mkdir()
        make_repo(repo, files)
        async with daemon_on_mock(state, scratch) as (daemon, _mock):
            threads = {name: (await daemon.ops.create_thread(cwd=str(where)))["thread_id"] for name, where in (("plain", plain), ("repo", repo))}
            counter = iter(range(10**9))

            async def one_turn(thread_id: str) -> None:
                ended = trio.Event()
                closing = daemon.hub.listen(thread_id, lambda event: ended.set() if event.type == "turn.completed" else None)
                try:
                    call = {"name": "exec_command", "arguments": {"cmd": f"echo {next(counter)} > bench-turn.txt", "login": False}}
                    await daemon.ops.send(thread_id, directive([{"calls": [call]}, {"text": "ok"}]))
                    await ended.wait()
                finally:
                    closing.close()

            async def raw_once() -> None:
                await trio.to_thread.run_sync(raw_git, repo, raw)

            variants: dict[str, Callable[[], Awaitable[object]]] = {
                "turn_plain": lambda: one_turn(threads["plain"]),
                "turn_repo": lambda: one_turn(threads["repo"]),
                "raw_git": raw_once,
            }
            samples = await interleaved(variants, runs)
    result: dict[str, Any] = {"runs": runs, "files": files}
    result.update(summaries(samples))
    result["turn_overhead_p50_ms"] = round(result["turn_repo_p50_ms"] - result["turn_plain_p50_ms"], 3)
    return result


def main(argv: list[str]) -> dict[str, Any]:
    return trio.run(turns, _option(argv, "runs", 40), _option(argv, "files", 2000))


if __name__ == "__main__":
    import json

    print(json.dumps(main(sys.argv[1:]), indent=2))
