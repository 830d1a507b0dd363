"""list_dir on real trees: Codex's order, indentation, type labels, paging and errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from echsd.tools.base import ToolError
from echsd.tools.list_dir import SPEC, ListDir
from tests.tools.readtools import call_without_file_privileges, text


async def listing(path: Path, **args: object) -> list[str]:
    output = await text(ListDir(), {"dir_path": str(path), **args}, path)
    header, *entries = output.split("\n")
    assert header == f"Absolute path: {path}"
    return entries


def make(root: Path, *paths: str) -> None:
    for relative in paths:
        target = root / relative
        if relative.endswith("/"):
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(relative)


def test_spec_is_codex_shaped() -> None:
    assert SPEC.name == "list_dir" and SPEC.parameters["required"] == ["dir_path"]
    assert set(SPEC.parameters["properties"]) == {"dir_path", "offset", "limit", "depth"}
    assert SPEC.description == "Lists entries in a local directory with 1-indexed entry numbers and simple type labels."


async def test_lists_entries_with_types_and_indentation(tmp_path: Path) -> None:
    make(tmp_path, "entry.txt", "nested/child.txt", "nested/deeper/grandchild.txt")
    (tmp_path / "link").symlink_to(tmp_path / "entry.txt")
    os.mkfifo(tmp_path / "pipe")
    assert await listing(tmp_path, offset=1, limit=20, depth=3) == [
        "entry.txt",
        "link@",
        "nested/",
        "  child.txt",
        "  deeper/",
        "    grandchild.txt",
        "pipe?",
    ]


async def test_depth(tmp_path: Path) -> None:
    make(tmp_path, "root.txt", "nested/child.txt", "nested/deeper/grandchild.txt")
    assert await listing(tmp_path, depth=1) == ["nested/", "root.txt"]
    assert await listing(tmp_path) == ["nested/", "  child.txt", "  deeper/", "root.txt"]  # default depth 2
    assert await listing(tmp_path, depth=3) == ["nested/", "  child.txt", "  deeper/", "    grandchild.txt", "root.txt"]


async def test_symlinked_directories_are_not_followed(tmp_path: Path) -> None:
    make(tmp_path, "real/inside.txt")
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    assert await listing(tmp_path) == ["alias@", "real/", "  inside.txt"]


async def test_pages_in_sorted_order(tmp_path: Path) -> None:
    make(tmp_path, "a/a_child.txt", "b/b_child.txt")
    assert await listing(tmp_path, offset=1, limit=2) == ["a/", "  a_child.txt", "More than 2 entries found"]
    assert await listing(tmp_path, offset=3, limit=2) == ["b/", "  b_child.txt"]
    assert await listing(tmp_path, offset=2, limit=10**20) == ["  a_child.txt", "b/", "  b_child.txt"]


async def test_default_limit_is_25(tmp_path: Path) -> None:
    make(tmp_path, *(f"file_{i:02}.txt" for i in range(40)))
    entries = await listing(tmp_path, depth=1)
    assert len(entries) == 26 and entries[0] == "file_00.txt" and entries[-1] == "More than 25 entries found"


async def test_order_is_by_relative_path(tmp_path: Path) -> None:
    # Codex orders by the path relative to the listed directory ("a" < "a-b.txt" < "a/x.txt"
    # < "a0.txt"), so a child can land after a sibling of its parent.
    make(tmp_path, "a/x.txt", "a-b.txt", "a0.txt")
    assert await listing(tmp_path) == ["a/", "a-b.txt", "  x.txt", "a0.txt"]


async def test_a_large_directory_keeps_only_the_page(tmp_path: Path) -> None:
    names = [f"f{i:05}" for i in range(3000)]
    for name in names:
        (tmp_path / name).touch()
    assert await listing(tmp_path, offset=1500, limit=3) == [*names[1499:1502], "More than 3 entries found"]


async def test_empty_directory_and_offset_errors(tmp_path: Path) -> None:
    assert await listing(tmp_path, offset=5) == []
    make(tmp_path, "nested/")
    with pytest.raises(ToolError, match="offset exceeds directory entry count"):
        await listing(tmp_path, offset=10, limit=1)
    for field, message in (("offset", "a 1-indexed entry number"), ("limit", "greater than zero"), ("depth", "greater than zero")):
        with pytest.raises(ToolError, match=f"{field} must be {message}"):
            await listing(tmp_path, **{field: 0})
    with pytest.raises(ToolError, match="depth must be a non-negative integer"):
        await listing(tmp_path, depth=-2)


async def test_paths_that_are_not_directories(tmp_path: Path) -> None:
    make(tmp_path, "file.txt")
    with pytest.raises(ToolError, match=r"failed to read directory: No such file or directory \(os error 2\)"):
        await listing(tmp_path / "missing")
    with pytest.raises(ToolError, match=r"failed to read directory: Not a directory \(os error 20\)"):
        await listing(tmp_path / "file.txt")
    with pytest.raises(ToolError, match="dir_path must not be empty"):
        await text(ListDir(), {"dir_path": ""}, tmp_path)


async def test_relative_path_and_undecodable_names(tmp_path: Path) -> None:
    make(tmp_path, "sub/x.txt")
    raw = os.fsencode(tmp_path / "sub") + b"/caf\xe9"  # not UTF-8
    with open(raw, "wb"):
        pass
    output = await text(ListDir(), {"dir_path": "sub"}, tmp_path)
    assert output.split("\n") == [f"Absolute path: {tmp_path / 'sub'}", "caf\ufffd", "x.txt"]


def test_unreadable_directories(tmp_path: Path) -> None:
    make(tmp_path, "locked/secret.txt", "open/ok.txt")
    (tmp_path / "locked").chmod(0)
    try:
        listed = call_without_file_privileges("list_dir", {"dir_path": str(tmp_path)}, tmp_path)
        assert listed == f"Absolute path: {tmp_path}\nlocked/\nopen/\n  ok.txt"
        refused = call_without_file_privileges("list_dir", {"dir_path": str(tmp_path / "locked")}, tmp_path)
        assert refused == "error: failed to read directory: Permission denied (os error 13)"
    finally:
        (tmp_path / "locked").chmod(0o755)
