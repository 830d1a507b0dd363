"""A pending approval as a list shows it: bounded whatever its arguments hold."""

from __future__ import annotations

import json
from typing import Any

from echsd.threads.approval_view import LISTED_BUDGET, LISTED_TEXT_CHARS, listed_form


def _size(value: Any) -> int:
    return len(json.dumps(value))


def test_small_arguments_are_shown_whole() -> None:
    arguments = {"cmd": "make test", "workdir": "/src", "env": [1, 2.5, None, True]}
    assert listed_form(arguments, "make test") == {"arguments": arguments, "summary": "make test", "arguments_truncated": False}


def test_a_long_string_and_summary_are_cut_with_a_note() -> None:
    listed = listed_form({"cmd": "x" * 5_000_000}, "x" * 5_000_000)
    assert listed["arguments_truncated"] is True
    assert listed["arguments"]["cmd"].startswith("x" * LISTED_TEXT_CHARS + "…")
    assert "4,998,000 more characters" in listed["arguments"]["cmd"]
    assert len(listed["summary"]) < LISTED_TEXT_CHARS + 100


def test_any_shape_stays_within_the_budget() -> None:
    shapes = [
        {f"key{n}": "v" * 1000 for n in range(10_000)},
        [["y" * 3000] * 100] * 100,
        {"k" * 100_000: 1},
    ]
    deep: Any = "bottom"
    for _ in range(5000):
        deep = [deep]
    shapes.append(deep)
    for arguments in shapes:
        listed = listed_form(arguments, "")
        assert listed["arguments_truncated"] is True
        assert _size(listed["arguments"]) < 2 * LISTED_BUDGET + 64 * 100, _size(listed["arguments"])
