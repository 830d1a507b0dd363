"""Applying chunks to one file's text (sans-IO): seeking, fuzz levels, line endings, round trips."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from echsd.tools.apply_patch.model import PatchApplyError, UpdateFile
from echsd.tools.apply_patch.parser import parse_patch
from echsd.tools.apply_patch.seek import COMPARISONS, LineFinder
from echsd.tools.apply_patch.update import apply_chunks


def update(original: str, body: str) -> str:
    (operation,) = parse_patch(f"*** Begin Patch\n*** Update File: f.txt\n{body}\n*** End Patch").operations
    assert isinstance(operation, UpdateFile)
    return apply_chunks(original, operation.chunks, "f.txt")


def test_seek_prefers_the_strictest_comparison_over_an_earlier_position() -> None:
    finder = LineFinder(["foo  ", "x", "foo", "bar"])
    assert finder.find(["foo", "bar"], 0) == 2
    assert finder.find(["foo"], 0) == 2
    assert finder.find(["  foo"], 0) == 0
    assert finder.find(["missing"], 0) is None
    assert finder.find(["a", "b", "c", "d", "e"], 0) is None
    assert finder.find([], 3) == 3


def test_seek_at_end_tries_the_file_end_first() -> None:
    finder = LineFinder(["a", "b", "a", "b"])
    assert finder.find(["a", "b"], 0) == 0
    assert finder.find(["a", "b"], 0, at_end=True) == 2
    assert finder.find(["a"], 0, at_end=True) == 0


def reference_find(lines: list[str], pattern: list[str], start: int, at_end: bool) -> int | None:
    """Codex's search, window by window."""
    if not pattern:
        return start
    last = len(lines) - len(pattern)
    candidates = ([last] if at_end and last >= start else []) + list(range(start, last + 1))
    for group in ([last], candidates) if at_end and last >= start else (candidates,):
        for compare in COMPARISONS:
            for position in group:
                if [compare(line) for line in lines[position : position + len(pattern)]] == [compare(p) for p in pattern]:
                    return position
    return None


SMALL_LINES = st.lists(st.sampled_from(["a", "a ", " a", "b", "\u2013", "-", ""]), max_size=10)


@settings(max_examples=400, deadline=None)
@given(SMALL_LINES, st.lists(SMALL_LINES, max_size=4), st.integers(0, 10), st.booleans())
def test_seek_agrees_with_a_window_by_window_search(lines: list[str], patterns: list[list[str]], start: int, at_end: bool) -> None:
    finder = LineFinder(lines)
    for pattern in patterns:  # several searches on one finder: its scan and its indexes
        assert finder.find(pattern, start, at_end=at_end) == reference_find(lines, pattern, start, at_end)


@pytest.mark.parametrize(
    ("original", "body", "expected"),
    [
        ("foo   \nbar\t\n", "@@\n foo\n-bar\n+baz", "foo   \nbaz\n"),
        ("    foo\n  bar\n", "@@\n foo\n-bar\n+baz", "    foo\nbaz\n"),
        ("\u201cq\u201d\n  x\n", '@@\n "q"\n-x\n+y', "\u201cq\u201d\ny\n"),
        ("import x  # local \u2013 avoids top\u2011level\n", "@@\n-import x  # local - avoids top-level\n+import x\n", "import x\n"),
        ("say \u201chi\u201d\u00a0now\n", '@@\n-say "hi" now\n+bye', "bye\n"),
    ],
)
def test_fuzzy_context(original: str, body: str, expected: str) -> None:
    assert update(original, body) == expected


def test_chunks_apply_in_order_with_anchors_and_end_of_file() -> None:
    original = "a\nb\nc\nd\ne\nf\n"
    assert update(original, "@@\n a\n-b\n+B\n@@\n c\n d\n-e\n+E\n@@\n f\n+g\n*** End of File") == "a\nB\nc\nd\nE\nf\ng\n"


def test_stacked_anchors_pick_the_right_repeat() -> None:
    original = "class A:\n    def m(self):\n        return 1\nclass B:\n    def m(self):\n        return 1\n"
    result = update(original, "@@ class B:\n@@     def m(self):\n-        return 1\n+        return 2")
    assert result == original.replace("return 1\n", "return 2\n", 2).replace("return 2\n", "return 1\n", 1)


def test_pure_addition_goes_to_the_end_or_after_its_anchor() -> None:
    assert update("line1\nline2\n", "@@\n+added") == "line1\nline2\nadded\n"
    assert update("def f():\n    pass\nx = 1\n", "@@ def f():\n+    '''doc'''") == "def f():\n    '''doc'''\n    pass\nx = 1\n"
    assert update("", "@@\n+first") == "first\n"


def test_trailing_empty_line_in_old_lines_is_forgiven() -> None:
    assert update("a\nb\n", "@@\n a\n-b\n+c\n") == "a\nc\n"


def test_result_ends_with_a_newline_and_blank_last_line_is_kept() -> None:
    assert update("no newline", "@@\n-no newline\n+first line\n+second line") == "first line\nsecond line\n"
    assert update("a\n\n", "@@\n-a\n+b") == "b\n\n"
    assert update("a\n", "@@\n-a") == ""


def test_crlf_and_bom_survive() -> None:
    assert update("\ufeffone\r\ntwo\r\n", "@@\n one\n-two\n+2") == "\ufeffone\r\n2\r\n"
    assert update("one\r\ntwo\n", "@@\n-two\n+2") == "one\r\n2\n"


def test_missing_lines_say_where_and_what() -> None:
    with pytest.raises(PatchApplyError) as caught:
        update("x\ny\n", "@@\n-missing\n-also")
    assert str(caught.value) == "Failed to find expected lines in f.txt (hunk at patch line 3):\nmissing\nalso"
    with pytest.raises(PatchApplyError, match=r"Failed to find context 'class Nope' in f.txt \(hunk at patch line 3\)"):
        update("x\n", "@@ class Nope\n-x")


def test_out_of_order_hunks_get_a_hint() -> None:
    with pytest.raises(PatchApplyError, match="they are at line 1, above line 4 where the search started"):
        update("a\nb\nc\nd\n", "@@\n-c\n+C\n@@\n-a\n+A")


LINE = st.text(st.characters(blacklist_characters="\n\r\ufeff", blacklist_categories=("Cs",)), max_size=12)


@st.composite
def file_and_edits(draw: st.DrawFn) -> tuple[list[str], list[tuple[int, int, list[str]]]]:
    lines = draw(st.lists(LINE, unique=True, max_size=30))
    cuts = sorted(draw(st.lists(st.integers(0, len(lines)), max_size=6)))
    edits = []
    for start, end in zip(cuts[::2], cuts[1::2]):
        edits.append((start, end, draw(st.lists(LINE, max_size=4))))
    return lines, edits


def build_patch(lines: list[str], edits: list[tuple[int, int, list[str]]]) -> str:
    """The patch a model would write: up to 3 context lines around each edit, never shared."""
    body = ["*** Begin Patch", "*** Update File: f.txt"]
    consumed = 0
    for number, (start, end, new) in enumerate(edits):
        next_start = edits[number + 1][0] if number + 1 < len(edits) else len(lines)
        before = lines[max(consumed, start - 3) : start]
        after = lines[end : min(end + 3, next_start)]
        assume(before or after or start < end or start == len(lines) == consumed)
        assume(before or after or new or start < end)
        body.append("@@")
        body += [" " + line for line in before] + ["-" + line for line in lines[start:end]]
        body += ["+" + line for line in new] + [" " + line for line in after]
        consumed = min(end + 3, next_start)
    return "\n".join(body + ["*** End Patch"])


@settings(max_examples=300, deadline=None)
@given(file_and_edits())
def test_generated_patches_round_trip(case: tuple[list[str], list[tuple[int, int, list[str]]]]) -> None:
    lines, edits = case
    assume(edits)
    patch = build_patch(lines, edits)
    expected_lines: list[str] = []
    position = 0
    for start, end, new in edits:
        expected_lines += lines[position:start] + new
        position = end
    expected_lines += lines[position:]
    original = "".join(line + "\n" for line in lines)
    (operation,) = parse_patch(patch).operations
    assert isinstance(operation, UpdateFile)
    assert apply_chunks(original, operation.chunks, "f.txt") == "".join(line + "\n" for line in expected_lines)
