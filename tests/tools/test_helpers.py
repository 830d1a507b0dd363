"""Truncation and argument checking (sans-IO)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from echsd.tools.args import check_arguments, parse_arguments
from echsd.tools.base import ToolError
from echsd.tools.exec_command import SPEC
from echsd.tools.truncate import truncate_middle


@given(st.text(), st.integers(min_value=100, max_value=5000))
def test_truncate_keeps_head_and_tail_within_budget(text: str, limit: int) -> None:
    out = truncate_middle(text, limit)
    if len(text) <= limit:
        assert out == text
    else:
        assert len(out) <= limit + 40
        assert "truncated" in out
        head = out.split("\n[... ")[0]
        assert text.startswith(head)
        assert text.endswith(out.rsplit("truncated ...]\n", 1)[1])


def test_arguments_checked_against_schema() -> None:
    schema = SPEC.parameters
    assert check_arguments(parse_arguments('{"cmd": "ls"}'), schema) == {"cmd": "ls"}
    assert parse_arguments({"cmd": "ls"}) == {"cmd": "ls"}
    cases = {
        "{oops": "not valid JSON",
        "[1, 2]": "expected a JSON object",
        '{"cmd": 3}': "must be string",
        '{"cmd": "ls", "yield_time_ms": "soon"}': "must be number",
        '{"cmd": "ls", "yield_time_ms": true}': "must be number",
        '{"cmd": "ls", "tty": "yes"}': "must be boolean",
        "{}": "missing required field(s): cmd",
        '{"cmd": "ls", "timeout_ms": 1000}': "unknown field(s): timeout_ms",
    }
    for raw, message in cases.items():
        with pytest.raises(ToolError, match=message.replace("(", r"\(").replace(")", r"\)")):
            check_arguments(parse_arguments(raw), schema)
