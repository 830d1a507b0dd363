"""The finish marker: only a trailing ``%%DONE%%`` counts, and a reply streamed in any
deltas shows exactly the whole reply with the marker cut (what the daemon keeps)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from echsd.done_marker import DONE_MARKER, MarkerHold, split_done


def test_only_a_trailing_marker_counts() -> None:
    assert split_done("all good %%DONE%%") == ("all good", True)
    assert split_done("all good\n\n%%DONE%%  \n") == ("all good", True)
    assert split_done("end your reply with %%DONE%% when it is complete).") == ("end your reply with %%DONE%% when it is complete).", False)
    assert split_done("%%DONE%%") == ("", True)
    assert split_done("100%") == ("100%", False)


pieces = st.lists(st.sampled_from(["a", " ", "\n", "%", "%%", "D", "O", "N", "E", DONE_MARKER, "%%DO", "NE%%", "x y"]), max_size=12)


@given(pieces, st.data())
def test_streamed_text_shows_what_the_whole_text_says(parts: list[str], data: st.DataObject) -> None:
    text = "".join(parts)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=6)))
    deltas = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
    hold = MarkerHold()
    shown = "".join(hold.feed(delta) for delta in deltas) + hold.end()
    assert shown == split_done(text)[0]
