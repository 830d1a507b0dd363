"""``BoardCore`` and ``BoardFollow``, sans-IO: decisions, versions across deletes, compare-
and-set, pending writes chaining, outcomes, and the replay/live seam of a subscription."""

from __future__ import annotations

import math

import pytest

from echsd.blackboard.core import BoardCore, Write
from echsd.blackboard.entries import MAX_KEY_BYTES, key_problem, stored_value
from echsd.errors import BadRequest, Conflict, NotFound
from echsd.store.rows import BlackboardChange, BlackboardRow
from echsd.wire.board_follow import BoardFollow

T = "thr_00000000000000aa"


def core(*entries: BlackboardRow, last_seq: int = 0) -> BoardCore:
    return BoardCore(entries, last_seq, max_value_bytes=1024)


def committed(board: BoardCore, write: Write) -> BlackboardRow:
    board.committed(write)
    return write.change.entry


@pytest.mark.parametrize(
    ("current", "if_version", "outcome"),
    [
        (None, None, 1),
        (None, 0, 1),
        (None, 1, "absent"),
        (BlackboardRow("k", 1, 3, T, 1.0), None, 4),
        (BlackboardRow("k", 1, 3, T, 1.0), 3, 4),
        (BlackboardRow("k", 1, 3, T, 1.0), 0, "at version 3"),
        (BlackboardRow("k", 1, 3, T, 1.0), 2, "at version 3"),
        (BlackboardRow("k", None, 5, T, 1.0, deleted=True), None, 6),
        (BlackboardRow("k", None, 5, T, 1.0, deleted=True), 0, 6),
        (BlackboardRow("k", None, 5, T, 1.0, deleted=True), 5, "deleted"),
    ],
)
def test_set_decisions(current: BlackboardRow | None, if_version: int | None, outcome: int | str) -> None:
    board = core(*([current] if current else []), last_seq=7)
    if isinstance(outcome, str):
        with pytest.raises(Conflict, match=outcome):
            board.decide_set("k", "v", writer=None, if_version=if_version, now=2.0)
        assert board.decided_seq == 7 and board.get("k") == (None if current is None or current.deleted else current)
        return
    write = board.decide_set("k", "v", writer=None, if_version=if_version, now=2.0)
    assert write.change.seq == 8 and write.change.entry.version == outcome
    assert write.base_version == (0 if current is None else current.version)
    assert board.get("k") == (None if current is None or current.deleted else current)  # not committed yet
    assert committed(board, write) == board.get("k")


def test_delete_leaves_a_tombstone_and_versions_go_on() -> None:
    board = core()
    committed(board, board.decide_set("k", 1, writer=T, if_version=None, now=1.0))
    with pytest.raises(Conflict):
        board.decide_delete("k", writer=None, if_version=2, now=2.0)
    gone = committed(board, board.decide_delete("k", writer=None, if_version=1, now=2.0))
    assert gone.deleted and gone.version == 2 and gone.value is None
    assert board.get("k") is None and board.listing() == [] and list(board.matching(key="k")) == [gone]
    with pytest.raises(NotFound):
        board.decide_delete("k", writer=None, if_version=None, now=3.0)
    assert committed(board, board.decide_set("k", 2, writer=None, if_version=0, now=3.0)).version == 3
    with pytest.raises(NotFound):
        board.decide_delete("absent", writer=None, if_version=None, now=3.0)


def test_pending_writes_chain_and_failures_are_forgotten() -> None:
    board = core()
    first = board.decide_set("k", 1, writer=None, if_version=0, now=1.0)
    with pytest.raises(Conflict):  # the pending create counts: a second create-only loses
        board.decide_set("k", 2, writer=None, if_version=0, now=1.0)
    second = board.decide_set("k", 2, writer=None, if_version=1, now=1.0)
    assert (second.base_version, second.change.entry.version, second.change.seq) == (1, 2, 2)
    board.failed(first)
    board.failed(second)
    assert board.get("k") is None
    third = board.decide_set("k", 3, writer=None, if_version=0, now=2.0)
    assert third.change.entry.version == 1 and third.change.seq == 3  # seqs 1 and 2 stay unused
    committed(board, third)
    assert board.committed_seq == 3


def test_refreshed_takes_the_stores_newer_view_only() -> None:
    board = core()
    committed(board, board.decide_set("k", 1, writer=None, if_version=None, now=1.0))
    board.refreshed("k", BlackboardRow("k", "other daemon", 4, None, 5.0), last_seq=9)
    assert board.get("k").version == 4 and board.decided_seq == 9  # type: ignore[union-attr]
    board.refreshed("k", BlackboardRow("k", "stale", 2, None, 5.0), last_seq=3)
    assert board.get("k").value == "other daemon"  # type: ignore[union-attr]
    board.refreshed("new", BlackboardRow("new", 1, 1, None, 5.0), last_seq=9)
    assert [e.key for e in board.listing()] == ["k", "new"]


def test_listing_and_matching_by_prefix() -> None:
    board = core(*(BlackboardRow(k, 1, 1, None, 1.0) for k in ("b", "a/1", "a/2", "a", "a0", "ab")))
    assert [e.key for e in board.listing("a/")] == ["a/1", "a/2"]
    assert [e.key for e in board.listing("a")] == ["a", "a/1", "a/2", "a0", "ab"]
    assert [e.key for e in board.listing()] == ["a", "a/1", "a/2", "a0", "ab", "b"]
    assert [e.key for e in board.matching(key="a/1", prefix="a/")] == ["a/1"]
    assert list(board.matching(key="a/1", prefix="b")) == []


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        ("team/x", None),
        ("", "empty"),
        (7, "not a string (int)"),
        ("k" * (MAX_KEY_BYTES + 1), "the limit is 512 bytes"),
        ("é" * 300, "600 bytes long"),
        ("a\x00b", "control characters"),
        ("\ud800", "lone surrogate"),
    ],
)
def test_key_rules(key: object, problem: str | None) -> None:
    found = key_problem(key)
    assert found is None if problem is None else problem in (found or "")
    if problem is not None:
        with pytest.raises(BadRequest):
            core().decide_set(key, 1, writer=None, if_version=None, now=1.0)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({"a": [1, 2.5, None, True, "x"]}, None),
        (b"bytes", "not JSON serializable: bytes"),
        ({1: "x"}, "a map key is not a string"),
        ([math.inf], "NaN or an infinity"),
        ({"x": {"y": math.nan}}, "NaN or an infinity"),
        (2**70, "Integer exceeds 64-bit range"),
        ("x" * 2000, "the limit is 1,024 bytes"),
        ({"s": "null"}, None),
    ],
)
def test_value_rules(value: object, problem: str | None) -> None:
    if problem is None:
        kept = stored_value(value, 1024)
        assert kept == value and kept is not value
        return
    with pytest.raises(BadRequest, match=problem):
        stored_value(value, 1024)


def change(seq: int, key: str) -> BlackboardChange:
    return BlackboardChange(seq, BlackboardRow(key, seq, 1, None, float(seq)))


def test_follow_seam_holds_live_changes_and_drops_duplicates() -> None:
    follow = BoardFollow(max_held=10)
    follow.begin("a/", 0)
    assert follow.on_live(change(3, "a/x")) == []  # held while replaying
    assert follow.on_live(change(4, "b/x")) == []  # not under the prefix
    assert follow.replayed("a/", 1) and follow.replayed("a/", 3)
    assert not follow.replayed("a/", 2)
    held, again = follow.finish()
    assert held == [] and not again  # seq 3 came from the log already
    assert follow.on_live(change(5, "a/y")) == ["a/"]
    assert follow.on_live(change(5, "a/y")) == []
    follow.begin("", 4)  # a second, overlapping subscription
    assert follow.on_live(change(6, "a/z")) == ["a/"]  # the first goes on; the new one holds it
    held, _ = follow.finish()
    assert [c.seq for c in held] == [6] and follow.position("") == 6
    assert follow.stop("a/") and not follow.stop("a/") and follow


def test_follow_overflow_asks_for_another_pass() -> None:
    follow = BoardFollow(max_held=2)
    follow.begin("", 0)
    for seq in (1, 2, 3):
        follow.on_live(change(seq, "k"))
    assert follow.finish() == ([], True)  # the hold overflowed: read the log again
    follow.replayed("", 3)
    follow.on_live(change(4, "k"))
    held, again = follow.finish()
    assert [c.seq for c in held] == [4] and not again
