"""apply_patch throughput on a large file.

A generated source file (default 50,000 lines, ~3.5 MB) gets a patch with 500 hunks spread
evenly through it, each with 3 lines of context on both sides, 2 lines removed and 2
added, as a model writes them. Reported, as the median of 5 runs:

- ``parse_ms``: parsing the patch text alone;
- ``apply_hunks_per_s`` / ``apply_mb_per_s``: the whole tool path on disk (parse, read,
  locate every hunk, build the new text, write it via temp file + rename), with MB the
  size of the file patched;
- ``fuzzy_hunks_per_s``: the same with every file line carrying trailing spaces the patch
  lacks, so each hunk is found by the second comparison (ignoring trailing whitespace);
- ``dry_run_ms``: computing the unified diff instead of writing.

Options: ``--lines=N``, ``--hunks=N``.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from echsd.tools.apply_patch import DiskView, apply_patch, parse_patch

RUNS = 5
CONTEXT = 3


def _options(argv: list[str]) -> dict[str, int]:
    opts = {"lines": 50_000, "hunks": 500}
    for arg in argv:
        if arg.startswith("--") and "=" in arg:
            key, value = arg[2:].split("=", 1)
            if key in opts:
                opts[key] = int(value)
    return opts


def _source(lines: int, padding: str) -> list[str]:
    return [f"    value_{i} = compute(item_{i}, scale={i % 97}) + offset  # line {i}{padding}" for i in range(lines)]


def _patch(lines: list[str], hunks: int) -> str:
    body = ["*** Begin Patch", "*** Update File: big.py"]
    step = len(lines) // hunks
    for number in range(hunks):
        start = number * step + CONTEXT
        body.append("@@")
        body += [" " + line.rstrip() for line in lines[start - CONTEXT : start]]
        body += ["-" + line.rstrip() for line in lines[start : start + 2]]
        body += [f"+    patched_{number}_{k} = True" for k in range(2)]
        body += [" " + line.rstrip() for line in lines[start + 2 : start + 2 + CONTEXT]]
    body.append("*** End Patch")
    return "\n".join(body) + "\n"


def _median_s(run: Callable[[], object]) -> float:
    timings = []
    for _ in range(RUNS):
        started = time.perf_counter()
        run()
        timings.append(time.perf_counter() - started)
    return statistics.median(timings)


def _apply_timing(directory: Path, source: str, patch: str, hunks: int, *, dry_run: bool = False) -> float:
    """Median seconds of ``apply_patch`` on a fresh copy of ``source`` (writing it is not timed)."""
    target = directory / "big.py"
    timings = []
    for _ in range(RUNS):
        target.write_text(source)
        started = time.perf_counter()
        apply_patch(patch, DiskView(directory), dry_run=dry_run)
        timings.append(time.perf_counter() - started)
    patched = target.read_text().count("patched_")
    assert patched == (0 if dry_run else 2 * hunks), patched
    return statistics.median(timings)


def main(argv: list[str]) -> dict[str, Any]:
    opts = _options(argv)
    exact_lines = _source(opts["lines"], "")
    fuzzy_lines = _source(opts["lines"], "   ")
    patch = _patch(exact_lines, opts["hunks"])
    exact_source = "\n".join(exact_lines) + "\n"
    fuzzy_source = "\n".join(fuzzy_lines) + "\n"
    megabytes = len(exact_source.encode()) / 1e6
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        apply_s = _apply_timing(root, exact_source, patch, opts["hunks"])
        fuzzy_s = _apply_timing(root, fuzzy_source, patch, opts["hunks"])
        dry_run_s = _apply_timing(root, exact_source, patch, opts["hunks"], dry_run=True)
    return {
        "file_lines": opts["lines"],
        "file_mb": round(megabytes, 2),
        "hunks": opts["hunks"],
        "patch_kb": round(len(patch) / 1e3, 1),
        "parse_ms": round(_median_s(lambda: parse_patch(patch)) * 1000, 2),
        "apply_ms": round(apply_s * 1000, 2),
        "apply_hunks_per_s": round(opts["hunks"] / apply_s),
        "apply_mb_per_s": round(megabytes / apply_s, 1),
        "fuzzy_hunks_per_s": round(opts["hunks"] / fuzzy_s),
        "fuzzy_mb_per_s": round(megabytes / fuzzy_s, 1),
        "dry_run_ms": round(dry_run_s * 1000, 2),
    }
