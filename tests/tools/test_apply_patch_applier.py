"""Applying patches to a real directory: all-or-nothing, rollback, dry runs, file details."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from echsd.tools.apply_patch import DiskView, PatchApplyError, PatchError, apply_patch
from tests.tools.patch_trees import make_tree, snapshot


def patch(*body: str) -> str:
    return "\n".join(["*** Begin Patch", *body, "*** End Patch"]) + "\n"


def test_summary_lists_added_modified_deleted_as_codex_does(tmp_path: Path) -> None:
    make_tree(tmp_path, {"mod.txt": "a\nb\n", "gone.txt": "x\n", "old/name.txt": "n\n", "old/keep.txt": "k\n"})
    outcome = apply_patch(
        patch(
            "*** Delete File: gone.txt",
            "*** Update File: mod.txt", "@@", " a", "-b", "+B",
            "*** Add File: new/dir/file.txt", "+hello",
            "*** Update File: old/name.txt", "*** Move to: renamed/name.txt", "@@", "-n", "+N",
        ),
        DiskView(tmp_path),
    )
    assert outcome.text() == (
        "Success. Updated the following files:\nA new/dir/file.txt\nM mod.txt\nM renamed/name.txt\nD gone.txt\n"
    )
    assert snapshot(tmp_path) == {
        "mod.txt": b"a\nB\n", "new": None, "new/dir": None, "new/dir/file.txt": b"hello\n",
        "old": None, "old/keep.txt": b"k\n", "renamed": None, "renamed/name.txt": b"N\n",
    }


def test_failure_in_the_second_file_changes_nothing(tmp_path: Path) -> None:
    make_tree(tmp_path, {"one.txt": "1\n", "two.txt": "2\n", "three.txt": "3\n"})
    before = snapshot(tmp_path)
    with pytest.raises(PatchApplyError) as caught:
        apply_patch(
            patch(
                "*** Update File: one.txt", "@@", "-1", "+one",
                "*** Update File: two.txt", "@@", "-not there", "+two",
                "*** Delete File: three.txt", "*** Add File: four/new.txt", "+4",
            ),
            DiskView(tmp_path),
        )
    assert caught.value.index == 1
    assert "Failed to find expected lines in two.txt (hunk at patch line 7):\nnot there" in str(caught.value)
    assert snapshot(tmp_path) == before


def test_commit_failure_midway_restores_everything(tmp_path: Path) -> None:
    """A real write failure (a file name longer than the filesystem allows) after others succeeded."""
    make_tree(tmp_path, {"a.txt": "a\n", "b.txt": "b\n", "run.sh": "#!/bin/sh\necho a\n"})
    os.chmod(tmp_path / "run.sh", 0o755)
    before = snapshot(tmp_path)
    with pytest.raises(PatchApplyError, match="File name too long; no file was changed"):
        apply_patch(
            patch(
                "*** Update File: a.txt", "@@", "-a", "+A",
                "*** Delete File: b.txt",
                "*** Update File: run.sh", "@@", "-echo a", "+echo b",
                "*** Add File: fresh/dir/c.txt", "+c",
                f"*** Add File: {'n' * 300}.txt", "+too long",
            ),
            DiskView(tmp_path),
        )
    assert snapshot(tmp_path) == before
    assert os.stat(tmp_path / "run.sh").st_mode & 0o777 == 0o755
    assert not [name for name in os.listdir(tmp_path) if name.endswith(".tmp")]


def test_dry_run_reports_a_diff_and_writes_nothing(tmp_path: Path) -> None:
    make_tree(tmp_path, {"mod.txt": "a\nb\nc\n", "gone.txt": "x\n", "src.txt": "s\n"})
    before = snapshot(tmp_path)
    outcome = apply_patch(
        patch(
            "*** Update File: mod.txt", "@@", " a", "-b", "+B",
            "*** Add File: new.txt", "+hello",
            "*** Delete File: gone.txt",
            "*** Update File: src.txt", "*** Move to: dst.txt", "@@", "-s", "+t",
        ),
        DiskView(tmp_path),
        dry_run=True,
    )
    assert snapshot(tmp_path) == before
    assert outcome.text() == (
        "Dry run: no file was changed. The patch applies cleanly and would update the following files:\n"
        "A new.txt\nM mod.txt\nM dst.txt\nD gone.txt\n\n"
        "diff --git a/mod.txt b/mod.txt\n--- a/mod.txt\n+++ b/mod.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
        "diff --git a/new.txt b/new.txt\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+hello\n"
        "diff --git a/gone.txt b/gone.txt\n--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n"
        "diff --git a/src.txt b/dst.txt\nrename from src.txt\nrename to dst.txt\n"
        "--- a/src.txt\n+++ b/dst.txt\n@@ -1 +1 @@\n-s\n+t\n"
    )


def test_dry_run_still_reports_errors(tmp_path: Path) -> None:
    with pytest.raises(PatchApplyError, match="Failed to read file to update missing.txt"):
        apply_patch(patch("*** Update File: missing.txt", "@@", "-a", "+b"), DiskView(tmp_path), dry_run=True)


def test_later_operations_see_earlier_ones(tmp_path: Path) -> None:
    make_tree(tmp_path, {"a": "x\n"})
    apply_patch(
        patch(
            "*** Add File: new.txt", "+one",
            "*** Update File: new.txt", "@@", "-one", "+two",
            "*** Delete File: a",
            "*** Add File: a/inside.txt", "+now a directory",
        ),
        DiskView(tmp_path),
    )
    assert snapshot(tmp_path) == {"new.txt": b"two\n", "a": None, "a/inside.txt": b"now a directory\n"}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (["*** Delete File: gone.txt", "*** Delete File: gone.txt"], "Failed to delete file gone.txt (patch line 3): No such file"),
        (["*** Add File: dir", "+x"], "Failed to write file dir (patch line 2): it is a directory"),
        (["*** Add File: file.txt/inner", "+x"], "Failed to write file file.txt/inner (patch line 2): "),
        (["*** Add File: new/a", "+x", "*** Add File: new", "+y"], "Failed to write file new (patch line 4): it is a directory"),
        (["*** Delete File: file.txt", "*** Add File: file.txt/in", "+x", "*** Add File: file.txt", "+y"],
         "Failed to write file file.txt (patch line 5): it is a directory"),
        (["*** Update File: dir", "@@", "-x"], "Failed to read file to update dir (patch line 2): it is a directory"),
        (["*** Update File: binary.bin", "@@", "-x"], "binary.bin (patch line 2): it is not UTF-8 text"),
        (["*** Update File: file.txt", "*** Move to: dir", "@@", "-x", "+y"], "Failed to write file dir (patch line 2): it is a directory"),
    ],
)
def test_impossible_operations_fail_cleanly(tmp_path: Path, body: list[str], message: str) -> None:
    make_tree(tmp_path, {"gone.txt": "g\n", "dir/keep": "k\n", "file.txt": "x\n", "binary.bin": b"\xff\xfe\x00x\n"})
    before = snapshot(tmp_path)
    with pytest.raises(PatchApplyError) as caught:
        apply_patch(patch(*body), DiskView(tmp_path))
    assert message in str(caught.value)
    assert snapshot(tmp_path) == before


def test_binary_file_can_be_deleted_and_replaced(tmp_path: Path) -> None:
    make_tree(tmp_path, {"a.bin": b"\xff\x00", "b.bin": b"\xfe"})
    apply_patch(patch("*** Delete File: a.bin", "*** Add File: b.bin", "+text now"), DiskView(tmp_path))
    assert snapshot(tmp_path) == {"b.bin": b"text now\n"}


def test_write_keeps_mode_and_follows_symlinks(tmp_path: Path) -> None:
    make_tree(tmp_path, {"real/script.sh": "echo 1\n"})
    os.chmod(tmp_path / "real/script.sh", 0o750)
    (tmp_path / "link.sh").symlink_to("real/script.sh")
    apply_patch(patch("*** Update File: link.sh", "@@", "-echo 1", "+echo 2"), DiskView(tmp_path))
    assert (tmp_path / "link.sh").is_symlink()
    assert (tmp_path / "real/script.sh").read_text() == "echo 2\n"
    assert os.stat(tmp_path / "real/script.sh").st_mode & 0o777 == 0o750


def test_new_files_get_default_permissions(tmp_path: Path) -> None:
    apply_patch(patch("*** Add File: new.txt", "+x"), DiskView(tmp_path))
    umask = os.umask(0)
    os.umask(umask)
    assert os.stat(tmp_path / "new.txt").st_mode & 0o777 == 0o666 & ~umask


def test_absolute_and_relative_paths(tmp_path: Path) -> None:
    (tmp_path / "cwd").mkdir()
    target = tmp_path / "elsewhere.txt"
    apply_patch(patch(f"*** Add File: {target}", "+abs", "*** Add File: ../up.txt", "+up"), DiskView(tmp_path / "cwd"))
    assert target.read_text() == "abs\n"
    assert (tmp_path / "up.txt").read_text() == "up\n"


PATCH_LINES = st.one_of(
    st.sampled_from(
        [
            "*** Add File: a.txt", "*** Add File: d/n.txt", "*** Add File: f.txt/x", "*** Delete File: a.txt",
            "*** Delete File: d", "*** Update File: a.txt", "*** Update File: b.bin", "*** Update File: d/c.txt",
            "*** Move to: d", "*** Move to: m/a.txt", "*** End of File", "@@", "@@ two", " one", "-two", "+2",
            "-one", " three", "+", "", "*** Update File: f.txt",
        ]
    ),
    st.builds(lambda prefix, text: prefix + text, st.sampled_from(" +-@*"), st.text(max_size=5)),
)
INITIAL = {"a.txt": "one\ntwo\nthree\n", "b.bin": b"\xff\n", "d/c.txt": "c\n", "f.txt": "f\n"}


@settings(max_examples=200, deadline=None)
@given(st.lists(PATCH_LINES, max_size=12))
def test_any_patch_applies_fully_or_changes_nothing(lines: list[str]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        make_tree(root, INITIAL)
        before = snapshot(root)
        try:
            apply_patch(patch(*lines), DiskView(root))
        except PatchError as exc:
            assert str(exc)
            assert snapshot(root) == before
