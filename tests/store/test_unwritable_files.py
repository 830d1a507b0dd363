"""A database whose ``-shm`` (or ``-wal``) file SQLite cannot write: ``echsd serve`` refuses
to start with one line naming the file. Before, it started and every write failed (or,
with the file mapped read-only and too short, the daemon died of SIGBUS without a word)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Iterator

import pytest

from tests.cli.helpers import ECHSD, clean_env


def make_unwritable(path: Path) -> Iterator[None]:
    """``path`` unwritable even for root (immutable), or by its mode for anyone else."""
    if os.geteuid() != 0:
        path.chmod(0o444)
        yield
        return
    chattr = shutil.which("chattr")
    if chattr is None or subprocess.run([chattr, "+i", str(path)], capture_output=True).returncode != 0:
        pytest.skip("as root, only an immutable file (chattr +i) is unwritable, and this filesystem or system has none")
    try:
        yield
    finally:
        subprocess.run([chattr, "-i", str(path)], check=True)


@pytest.mark.parametrize("suffix", ["-shm", "-wal"])
def test_serve_refuses_an_unwritable_companion_file(tmp_path: Path, suffix: str) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    companion = state / f"echsd.db{suffix}"
    companion.write_bytes(b"")
    for _ in make_unwritable(companion):
        result = subprocess.run(
            [ECHSD, "serve", "--provider", "mock", "--state-dir", str(state)],
            env=clean_env(tmp_path), capture_output=True, text=True, timeout=30,
        )
        assert result.returncode == 1, result.stderr[-2000:]
        last = result.stderr.strip().splitlines()[-1]
        assert last.startswith("echsd: cannot write ") and f"echsd.db{suffix}" in last, result.stderr[-2000:]
