"""The state machine tables, enumerated (sans-IO)."""

from __future__ import annotations

import itertools

import pytest

from echsd.errors import BadRequest, InvalidState
from echsd.threads.state import (
    TRANSITIONS,
    Disposition,
    InputMode,
    ThreadState,
    Trigger,
    input_disposition,
    parse_mode,
    transition,
)


def test_every_pair_is_legal_or_refused() -> None:
    for state, trigger in itertools.product(ThreadState, Trigger):
        if (state, trigger) in TRANSITIONS:
            assert transition(state, trigger) is TRANSITIONS[(state, trigger)]
        else:
            with pytest.raises(InvalidState):
                transition(state, trigger)


def test_killed_is_final() -> None:
    assert not [key for key in TRANSITIONS if key[0] is ThreadState.KILLED]
    with pytest.raises(InvalidState):
        input_disposition(ThreadState.KILLED, InputMode.SEND)


@pytest.mark.parametrize(
    ("state", "mode", "accepting", "nothing_ahead", "expected"),
    [
        (ThreadState.IDLE, InputMode.SEND, True, True, Disposition.STARTED),
        (ThreadState.IDLE, InputMode.QUEUE, True, True, Disposition.STARTED),
        (ThreadState.IDLE, InputMode.STEER, True, True, Disposition.STARTED),
        (ThreadState.IDLE, InputMode.SEND, True, False, Disposition.QUEUED),
        (ThreadState.RUNNING, InputMode.SEND, True, True, Disposition.QUEUED),
        (ThreadState.RUNNING, InputMode.QUEUE, True, True, Disposition.QUEUED),
        (ThreadState.RUNNING, InputMode.STEER, True, True, Disposition.STEERED),
        (ThreadState.RUNNING, InputMode.STEER, False, True, Disposition.QUEUED),
        (ThreadState.PAUSED, InputMode.STEER, True, True, Disposition.QUEUED),
        (ThreadState.PAUSED, InputMode.SEND, True, True, Disposition.QUEUED),
    ],
)
def test_input_dispositions(state, mode, accepting, nothing_ahead, expected) -> None:  # type: ignore[no-untyped-def]
    assert input_disposition(state, mode, steer_accepted=accepting, nothing_ahead=nothing_ahead) is expected


def test_parse_mode() -> None:
    assert parse_mode(None) is InputMode.SEND
    assert parse_mode("steer") is InputMode.STEER
    with pytest.raises(BadRequest):
        parse_mode("shout")
