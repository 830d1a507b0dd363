"""Verbs that read long lists page through them: a page may be short (the daemon's byte
budget is half its frame limit), so only an empty page (events) or a null
``next_offset`` (history, threads) ends the reading. Run against a daemon with a 64 KiB
frame limit, where a few hundred events already take several pages."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.helpers import echs, json_lines, new_thread
from tests.helpers import conversation, mock_directive


def test_events_read_on_past_short_pages(small_frames: Path) -> None:
    tid = new_thread(small_frames)
    reply = echs(small_frames, "send", tid, mock_directive({"repeat": {"chunk": "chunk of text ", "count": 1500}}), "--wait")
    assert reply.returncode == 0, reply.stderr
    result = echs(small_frames, "events", tid, "--json")
    assert result.returncode == 0, result.stderr
    events = json_lines(result.stdout)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[-1]["event"] == "thread.state" and sum(e["event"] == "turn.delta" for e in events) == 1500
    human = echs(small_frames, "events", tid, "--since", "10").stdout.splitlines()
    assert len(human) == len(events) - 10


def test_history_bigger_than_a_frame_is_read_in_pages(small_frames: Path) -> None:
    tid = new_thread(small_frames)
    for index in range(4):  # each turn adds ~40 KB of items: the whole history is over 64 KiB
        text = f"message {index} " + "z" * 20_000
        assert echs(small_frames, "send", tid, text, "--wait").returncode == 0
    result = echs(small_frames, "history", tid, "--json")
    assert result.returncode == 0, result.stderr
    items = conversation(json.loads(result.stdout))
    assert len(items) == 8 and [item["role"] for item in items] == ["user", "assistant"] * 4
    assert items[6]["content"][0]["text"].startswith("message 3 ")
    human = echs(small_frames, "history", tid)
    assert human.returncode == 0 and human.stdout.count("user ›") == 5  # with the environment context, before the first
