"""The sans-IO parts of the CLI: which events ``--wait`` follows (``TurnWatch``), what
``attach`` shows for an event sequence (``AttachView``), line cutting and text safety."""

from __future__ import annotations

from typing import Any

import click
import pytest

from echsd.cli.attach_view import AttachView, LineCutter
from echsd.cli.echs_threads import parse_settings
from echsd.cli.echs_wait import exit_code
from echsd.wire.turnwatch import TurnWatch
from echsd.cli.render import Style, clip_lines, printable

PLAIN = Style(False)


def event(kind: str, seq: int = 1, **data: Any) -> dict[str, Any]:
    return {"event": kind, "thread_id": "thr_1", "seq": seq, "ts": 0.0, "data": data}


def test_turn_watch_skips_other_turns_and_ends_with_its_own() -> None:
    watch = TurnWatch("in_me")
    assert not watch.accept(event("turn.delta", turn_id="t0", delta="earlier turn"))
    assert watch.accept(event("input.queued", input_id="in_me", position=1))
    assert not watch.accept(event("turn.completed", turn_id="t0"))
    assert not watch.accept(event("input.delivered", input_id="in_other", turn_id="t0"))
    assert watch.accept(event("input.delivered", input_id="in_me", turn_id="t1"))
    assert watch.accept(event("turn.delta", turn_id="t1", delta="mine"))
    assert not watch.done
    assert watch.accept(event("turn.interrupted", turn_id="t1", reason="interrupt"))
    assert watch.done and exit_code(watch) == 3


@pytest.mark.parametrize(
    ("ending", "code"),
    [
        (event("turn.completed", turn_id="t1"), 0),
        (event("turn.error", turn_id="t1", error={"code": "x"}), 4),
        (event("turn.error", turn_id=None, error={"code": "crash"}), 4),
        (event("thread.killed", reason="killed"), 3),
    ],
)
def test_turn_watch_outcomes(ending: dict[str, Any], code: int) -> None:
    watch = TurnWatch("in_me")
    watch.accept(event("input.delivered", input_id="in_me", turn_id="t1"))
    assert watch.accept(ending) and exit_code(watch) == code


def test_turn_watch_dropped_input_fails() -> None:
    watch = TurnWatch("in_me")
    assert watch.accept(event("input.dropped", input_id="in_me", reason="killed"))
    assert watch.done and exit_code(watch) == 1


def test_attach_view_streams_lines_and_tools() -> None:
    view = AttachView(PLAIN, width=40)
    lines: list[str] = []
    for e in [
        event("input.delivered", input_id="i1", turn_id="t", mode="queue"),
        event("item.completed", turn_id="t", item={"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}),
        event("turn.delta", turn_id="t", item_id="m1", delta="Hello "),
        event("turn.delta", turn_id="t", item_id="m1", delta="there.\nSecond"),
        event(
            "item.completed", turn_id="t", item={"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "x"}]}
        ),
        event("tool.started", turn_id="t", call_id="c1", name="exec_command", arguments={"cmd": "ls"}),
        event("tool.output", turn_id="t", call_id="c1", stream="stdout", chunk="a\nb"),
        event("tool.completed", turn_id="t", call_id="c1", name="exec_command", ok=True, output="a\nb", duration_ms=12),
        event("input.delivered", input_id="i2", turn_id="t", mode="steer"),
        event("item.completed", turn_id="t", item={"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}),
        event("turn.usage", turn_id="t", input_tokens=1500, output_tokens=20),
        event("turn.completed", turn_id="t"),
    ]:
        lines.extend(view.feed(e))
    assert lines == [
        "you › hi",
        "assistant › Hello there.",
        "  Second",
        '⚙ exec_command(cmd="ls")',
        "  │ a",
        "  │ b",
        "  ✓ exec_command · 12ms",
        "you (steer) › go",
        "✓ turn completed · 1.5k in / 20 out",
    ]


def test_attach_view_shows_a_message_whose_deltas_were_folded() -> None:
    view = AttachView(PLAIN, width=80)
    gap = view.feed(event("events.gap", from_seq=3, to_seq=9, reason="retention"))
    whole = view.feed(
        event(
            "item.completed",
            turn_id="t",
            item={"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "all of it"}]},
        )
    )
    assert gap == ["… events 3..9 not shown (retention)"] and whole == ["assistant › all of it"]
    output = view.feed(event("tool.completed", call_id="c", name="read_file", ok=False, output="boom", duration_ms=1500))
    assert output == ["  │ boom", "  ✗ read_file · 1.5s"]
    assert view.feed(event("thread.state", state="paused")) == ["── paused ──"]
    assert view.feed(event("thread.state", state="idle")) == ["── idle ──"]
    assert view.feed(event("thread.state", state="running")) == []


def test_line_cutter_wraps_long_lines_at_spaces() -> None:
    cutter = LineCutter(24, ("> ", "> "), ("  ", "  "), str)
    assert cutter.add("one two three four five six seven") == ["> one two three four"]
    assert cutter.flush() == ["  five six seven"]


def test_printable_and_clip() -> None:
    assert printable("\x1b]0;pwned\x07ok\x1b[2J\r\n") == "ok\n"
    assert printable("a\x9b31mb\x9d2;t\x9cc\u202ed\x1bPq\x1b\\e\x1b(Bf") == "abcdef"  # 8-bit forms, bidi, DCS, charset
    assert printable("x\x1b]52;c;unended\nnext") == "x\nnext"  # an unended string stops at the line's end
    assert clip_lines("\n".join(str(i) for i in range(20)), max_lines=3) == ["0", "1", "2", "… (17 more lines, 49 chars in all)"]
    assert clip_lines("a\nb\nc\nd", max_lines=3) == ["a", "b", "c", "d"]  # a marker would hide just one line
    assert clip_lines("a\nb\nc\nd\ne", max_lines=3) == ["a", "b", "c", "… (2 more lines, 9 chars in all)"]


def test_killed_is_said_once() -> None:
    view = AttachView(PLAIN, width=80)
    assert view.feed(event("thread.killed", reason="killed")) == ["thread killed"]
    assert view.feed(event("thread.killed", reason="parent thr_0123456789abcdef was killed")) == [
        "thread killed: parent thr_0123456789abcdef was killed"
    ]


def test_config_pairs() -> None:
    assert parse_settings(("model=x", "tools=+a,-b", "instructions=a=b")) == {"model": "x", "tools": "+a,-b", "instructions": "a=b"}
    assert parse_settings(("reasoning=ultra", "project_docs=false")) == {"reasoning": "ultra", "project_docs": False}
    for bad in (("model",), ("=x",), ("color=x",), ("reasoning=maximal",), ("project_docs=maybe",)):
        with pytest.raises(click.BadParameter):
            parse_settings(bad)


def test_turn_status_line() -> None:
    from echsd.cli.attach_status import TurnStatus

    status = TurnStatus()
    assert status.line(100.0, "", 80) is None
    status.feed({**event("turn.started", turn_id="t"), "ts": 100.0})
    assert status.line(107.5, "", 80).endswith("running 7s")  # type: ignore[union-attr]
    assert status.line(165.0, "assistant › half a li", 80).endswith("running 1m 05s · assistant › half a li")  # type: ignore[union-attr]
    tail = status.line(101.0, "assistant › " + "word " * 40, 40)
    assert tail is not None and len(tail) <= 40 and "· …" in tail and tail.endswith("word word")
    status.feed({**event("turn.retry", turn_id="t", attempt=2, max_retries=5, delay_s=4.0, reason="HTTP 503"), "ts": 110.0})
    assert status.line(111.0, "", 120).endswith("model request failed, retry 2/5 in 3.0s: HTTP 503")  # type: ignore[union-attr]
    status.feed(event("turn.delta", turn_id="t", delta="x"))
    assert status.line(112.0, "assistant › x", 80).endswith("· assistant › x")  # type: ignore[union-attr]
    status.feed(event("turn.waiting", turn_id="t", reason="50 sub-agent turns are running"))
    assert "waiting to run: 50 sub-agent turns are running" in status.line(112.0, "", 120)  # type: ignore[operator]
    status.feed(event("turn.completed", turn_id="t"))
    assert status.line(113.0, "", 80) is None


def test_a_freeform_call_shows_its_input_as_text() -> None:
    from echsd.cli.render_history import item_lines

    patch = "*** Begin Patch\n*** Delete File: old.txt\n*** End Patch"
    call = {"type": "custom_tool_call", "name": "apply_patch", "call_id": "c1", "input": patch}
    assert item_lines(call, PLAIN) == ["call › apply_patch  [c1]", "  *** Begin Patch", "  *** Delete File: old.txt", "  *** End Patch"]
    result = {"type": "custom_tool_call_output", "call_id": "c1", "output": "Success. Deleted old.txt"}
    assert item_lines(result, PLAIN) == ["output ›  [c1]", "  Success. Deleted old.txt"]
