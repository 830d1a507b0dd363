"""The patch parser (sans-IO): the format, Codex's leniencies, and errors that say where."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from echsd.tools.apply_patch.model import AddFile, Chunk, DeleteFile, PatchParseError, UpdateFile
from echsd.tools.apply_patch.parser import parse_patch


def wrap(body: str) -> str:
    return f"*** Begin Patch\n{body}\n*** End Patch\n"


def test_all_operations() -> None:
    patch = parse_patch(
        wrap(
            "*** Add File: path/add.py\n+abc\n+\n+def\n"
            "*** Delete File: path/delete.py\n"
            "*** Update File: path/update.py\n*** Move to: path/update2.py\n"
            "@@ def f():\n-    pass\n+    return 123\n"
            "@@\n context\n-old\n+new\n\n*** End of File"
        )
    )
    assert patch.operations == (
        AddFile("path/add.py", "abc\n\ndef\n", 2),
        DeleteFile("path/delete.py", 6),
        UpdateFile(
            "path/update.py",
            "path/update2.py",
            (
                Chunk(("def f():",), ("    pass",), ("    return 123",), False, 9, (None,)),
                Chunk((), ("context", "old", ""), ("context", "new", ""), True, 12, (0, None, 2)),
            ),
            7,
        ),
    )


def test_first_chunk_may_omit_its_marker_and_empty_line_is_context() -> None:
    (update,) = parse_patch(wrap("*** Update File: f.py\n import foo\n\n+bar")).operations
    assert isinstance(update, UpdateFile)
    assert update.chunks == (Chunk((), ("import foo", ""), ("import foo", "", "bar"), False, 3, (0, 1, None)),)


def test_update_followed_by_add_and_blank_lines_between_operations() -> None:
    ops = parse_patch(wrap("*** Update File: a\n@@\n+line\n\n   \n*** Add File: b\n+x\n\n*** Delete File: c")).operations
    assert [type(op).__name__ for op in ops] == ["UpdateFile", "AddFile", "DeleteFile"]


def test_padded_markers_crlf_and_surrounding_whitespace() -> None:
    text = "\n\n  *** Begin Patch \r\n  *** Update File: foo.txt  \r\n@@\r\n-old\r\n+new\r\n *** End Patch  \n\n"
    (update,) = parse_patch(text).operations
    assert update == UpdateFile("foo.txt", None, (Chunk((), ("old",), ("new",), False, 5, (None,)),), 4)


@pytest.mark.parametrize("opener", ["<<EOF", "<<'EOF'", '<<"EOF"', "<<'PATCH'"])
def test_heredoc_wrapper_is_dropped(opener: str) -> None:
    closer = opener.strip("<'\"")
    (add,) = parse_patch(f"{opener}\n*** Begin Patch\n*** Add File: a\n+hi\n*** End Patch\n{closer}\n").operations
    assert add == AddFile("a", "hi\n", 3)


def test_mismatched_heredoc_is_not_unwrapped() -> None:
    with pytest.raises(PatchParseError, match="first line of the patch must be"):
        parse_patch("<<\"EOF'\n*** Begin Patch\n*** Add File: a\n+hi\n*** End Patch\nEOF\n")


def test_stacked_anchors_and_diff_range_headers() -> None:
    (update,) = parse_patch(wrap("*** Update File: a\n@@ class A\n@@     def m(self):\n-x\n+y\n@@ -10,3 +10,3 @@\n-p\n+q")).operations
    assert isinstance(update, UpdateFile)
    assert [chunk.anchors for chunk in update.chunks] == [("class A", "    def m(self):"), ()]


def test_empty_patch_parses_to_no_operations() -> None:
    assert parse_patch("*** Begin Patch\n*** End Patch").operations == ()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "Invalid patch: The first line of the patch must be '*** Begin Patch' (the patch is empty)"),
        ("bad", "Invalid patch: The first line of the patch must be '*** Begin Patch', got: 'bad'"),
        ("*** Begin Patch\nbad", "Invalid patch: The last line of the patch must be '*** End Patch', got: 'bad'"),
        ("*** Begin Patch", "The last line of the patch must be '*** End Patch'"),
        (wrap("*** Frobnicate File: foo"), "Invalid patch hunk on line 2: '*** Frobnicate File: foo' is not a valid hunk header"),
        (wrap("*** Update File: test.py"), "Invalid patch hunk on line 2: Update file hunk for path 'test.py' is empty"),
        (wrap("*** Add File:"), "Invalid patch hunk on line 2: '*** Add File:' is missing the file path"),
        (wrap("*** Update File: a\n*** Move to:  \n@@\n-x"), "on line 3: '*** Move to:' is missing the file path"),
        (wrap("*** Update File: a\n@@"), "Invalid patch hunk on line 4: Update hunk does not contain any lines"),
        (wrap("*** Update File: a\n@@\n*** End of File"), "on line 4: Update hunk does not contain any lines"),
        (wrap("*** Update File: a\n@@\nbad"), "on line 4: Unexpected line found in update hunk: 'bad'. Every line should start with"),
        (wrap("*** Update File: a\n@@\n-x\nbad"), "on line 5: Expected update hunk to start with a @@ context marker, got: 'bad'"),
        (wrap("*** Add File: a\n+x\nno plus"), "on line 4: 'no plus' is not a valid hunk header"),
        ("\n\n*** Begin Patch\n*** Nope\n*** End Patch", "on line 4: '*** Nope'"),
        ("<<'EOF'\n*** Begin Patch\n*** Nope\n*** End Patch\nEOF", "on line 3: '*** Nope'"),
    ],
)
def test_errors_say_what_and_where(text: str, message: str) -> None:
    with pytest.raises(PatchParseError) as caught:
        parse_patch(text)
    assert message in str(caught.value)


MARKERS = ["*** Begin Patch", "*** End Patch", "*** Add File: a", "*** Delete File: b", "*** Update File: c",
           "*** Move to: d", "*** End of File", "@@", "@@ ctx", "<<'EOF'", "EOF", "", " "]
LINES = st.one_of(st.sampled_from(MARKERS), st.text(max_size=8), st.builds(lambda p, t: p + t, st.sampled_from(" +-*@"), st.text(max_size=6)))


@settings(max_examples=300, deadline=None)
@given(st.lists(LINES, max_size=14), st.sampled_from(["\n", "\r\n"]))
def test_any_text_parses_or_raises_a_parse_error(lines: list[str], newline: str) -> None:
    try:
        patch = parse_patch(newline.join(lines))
    except PatchParseError as exc:
        assert str(exc).startswith("Invalid patch")
    else:
        assert all(op.path for op in patch.operations)
