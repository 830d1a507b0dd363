"""``echs diff``'s and ``echs undo``'s text: coloured like git's on a terminal, plain else."""

from __future__ import annotations

from echsd.cli.render import Style
from echsd.cli.render_diff import diff_lines, undo_lines

FOUND = {
    "turn": 2,
    "turn_id": "turn_1",
    "paths": ["a.txt"],
    "stat": {"files": 1, "insertions": 1, "deletions": 1},
    "diff": "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-old\n+new\x1b]52;c;evil\x07\n",
}


def test_diff_lines_in_colour_and_plain() -> None:
    plain = diff_lines(FOUND, Style(False))
    assert plain[0] == "turn 2 (turn_1): 1 file(s), +1 -1" and "-old" in plain and "+new" in plain
    assert not any("\x1b" in line for line in plain)  # the diff's own escapes neutralised too
    coloured = diff_lines(FOUND, Style(True))
    assert "\x1b[32m+new" in "\n".join(coloured) and "\x1b[31m-old" in "\n".join(coloured)
    assert diff_lines({"turn": 3, "paths": []}, Style(False)) == ["turn 3 changed no files"]
    assert "no turn" in diff_lines({"turn": None}, Style(False))[0]


def test_undo_lines_name_what_was_done() -> None:
    lines = undo_lines({"turns": [2, 3], "items_removed": 7, "restored": ["a"], "removed": ["b"], "kept": ["c"], "note": None})
    assert lines[0] == "undid turns 2, 3 (7 history items)"
    assert "  restored: a" in lines and "  removed: b" in lines and any(line.startswith("  left alone") for line in lines)
