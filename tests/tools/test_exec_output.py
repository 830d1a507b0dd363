"""The sans-IO parts of exec output: the head+tail buffer, token clipping, Codex's report."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from echsd.tools.exec_output import BYTES_PER_TOKEN, Captured, ExecReport, HeadTailBuffer, approx_tokens, clip

MARKER = re.compile(r"…(\d+) tokens truncated…")


@given(st.lists(st.binary(max_size=300), max_size=40), st.integers(min_value=1, max_value=200))
def test_buffer_keeps_exact_head_and_tail_and_counts_the_rest(chunks: list[bytes], half: int) -> None:
    buffer = HeadTailBuffer(half)
    for chunk in chunks:
        buffer.append(chunk)
    whole = b"".join(chunks)
    taken = buffer.take()
    assert taken.total_bytes == len(whole)
    assert taken.head == whole[:half]
    if taken.dropped:
        assert len(taken.tail) == half and whole.endswith(taken.tail)
    else:
        assert taken.head + taken.tail == whole
    assert taken.lines == whole.count(b"\n") + (1 if whole and not whole.endswith(b"\n") else 0)
    assert buffer.take().total_bytes == 0  # taking empties it


@given(st.text(max_size=3000), st.integers(min_value=1, max_value=300))
def test_clip_fits_the_budget_and_keeps_both_ends(text: str, max_tokens: int) -> None:
    data = text.encode()
    buffer = HeadTailBuffer(max(max_tokens * BYTES_PER_TOKEN, 1))  # a buffer at least as large as the clip
    buffer.append(data)
    out = clip(buffer.take(), max_tokens)
    if len(data) <= max_tokens * BYTES_PER_TOKEN:
        assert out == text
        return
    header, body = out.split("\n\n", 1)
    assert header == f"Total output lines: {text.count(chr(10)) + (0 if text.endswith(chr(10)) else 1)}"
    found = MARKER.search(body)
    assert found is not None
    front, back = body[: found.start()], body[found.end() :]
    assert text.startswith(front) and text.endswith(back)
    assert len(front.encode()) + len(back.encode()) <= max_tokens * BYTES_PER_TOKEN
    assert int(found.group(1)) == approx_tokens(len(data) - len(front.encode()) - len(back.encode()))


def test_clip_of_a_buffer_that_dropped_its_middle() -> None:
    buffer = HeadTailBuffer(100)
    buffer.append(b"H" * 100 + b"m" * 10_000 + b"T" * 100)
    out = clip(buffer.take(), 10)
    assert out == "Total output lines: 1\n\n" + "H" * 20 + f"…{approx_tokens(10_160)} tokens truncated…" + "T" * 20


def test_report_lines() -> None:
    captured = Captured(b"hello\n", lines=1)
    running = ExecReport(1.23456, captured, 100, session_id=4242, notes=["something to know"], chunk_id="abcdef")
    assert running.render() == (
        "Chunk ID: abcdef\nWall time: 1.2346 seconds\nProcess running with session ID 4242\n"
        "Original token count: 2\nNote: something to know\nOutput:\nhello\n"
    )
    assert ExecReport(0.0, captured, 100, exit_status=2).status_line() == "Process exited with code 2"
    killed = ExecReport(0.0, captured, 100, exit_status=-9)
    assert killed.status_line() == "Process killed by signal 9 (SIGKILL)"
    assert killed.meta() == {"exit_code": None, "signal": 9, "session_id": None}
