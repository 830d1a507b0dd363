"""The seam between replay and live (``echsd.seam.Seam``), checked exhaustively: whatever the
interleaving of commits, listening and reading, and whatever the hold's bound, every seq goes
on once, in order."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from echsd.seam import Seam


@given(
    committed_before=st.integers(0, 30),
    during=st.lists(st.integers(0, 3), max_size=12),  # events committed while each page is read
    since=st.integers(0, 10),
    max_held=st.integers(1, 6),
    page=st.integers(1, 5),
)
def test_replay_then_live_sends_each_seq_once_in_order(committed_before: int, during: list[int], since: int, max_held: int, page: int) -> None:
    since = min(since, committed_before)
    log: list[int] = list(range(1, committed_before + 1))  # the store
    sent: list[int] = []
    seam: Seam[str, int] = Seam(max_held)
    seam.cursor["t"] = since
    seam.begin(lambda key: key == "t")  # listening already: what commits from now on is live
    pending = list(during)

    def commit(count: int) -> None:
        for _ in range(count):
            seq = len(log) + 1
            log.append(seq)
            if not seam.holds("t", seq, seq):
                raise AssertionError("a live event during a replay must be held")

    while True:
        after = seam.position("t")
        while True:
            chunk = [seq for seq in log if seq > after][:page]
            commit(pending.pop(0) if pending else 0)
            for seq in chunk:
                if seam.replayed("t", seq):
                    sent.append(seq)
            if len(chunk) < page:
                break
            after = chunk[-1]
        held, reread = seam.finish()
        sent.extend(held)
        if not reread:
            break
    for seq in range(len(log) + 1, len(log) + 4):  # live from now on
        log.append(seq)
        if seam.passes("t", seq):
            sent.append(seq)
    assert sent == list(range(since + 1, len(log) + 1))


def test_two_copies_of_one_event_go_on_once() -> None:
    seam: Seam[str, int] = Seam()
    assert seam.passes("t", 1) and not seam.passes("t", 1) and seam.passes("t", 2)
    assert not seam.passes("t", 1, 2) and seam.passes("t", 3, 9) and seam.position("t") == 9
