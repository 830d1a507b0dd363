"""The thread state machine: every legal transition, as plain tables.

Rules of this module (after h11's ``_state.py``): everything that decides *whether* a
thread may change state, and what an incoming input becomes, lives here and nowhere else.
The actor asks this module, then does the IO. An illegal transition raises
``InvalidState``; tests enumerate the tables below.

Theory of operation
-------------------
A thread is ``idle``, ``running`` (a turn is in progress), ``paused`` (takes no new turn
until resumed) or ``killed`` (final). Turns start from ``idle`` only. Interrupting or pausing
a running turn goes through an *ending* phase (the turn's cancel scope is cancelled, its
processes are killed and history is repaired); the table entry for the finished turn then
says where the thread lands (``idle`` after an interrupt, ``paused`` after a pause).
"""

from __future__ import annotations

from enum import Enum

from echsd.errors import BadRequest, InvalidState


class ThreadState(str, Enum):
    IDLE = "idle"
    RUNNING = "running"
    PAUSED = "paused"
    KILLED = "killed"


class Trigger(str, Enum):
    TURN_START = "turn_start"
    TURN_END = "turn_end"  # the turn finished by itself (completed or error) or was interrupted
    TURN_END_PAUSED = "turn_end_paused"  # the turn ended because of a pause
    PAUSE = "pause"
    RESUME = "resume"
    KILL = "kill"
    RECOVER = "recover"  # a turn was open when the daemon (or the worker) died


S, T = ThreadState, Trigger

TRANSITIONS: dict[tuple[ThreadState, Trigger], ThreadState] = {
    (S.IDLE, T.TURN_START): S.RUNNING,
    (S.RUNNING, T.TURN_END): S.IDLE,
    (S.RUNNING, T.TURN_END_PAUSED): S.PAUSED,
    (S.IDLE, T.PAUSE): S.PAUSED,
    (S.PAUSED, T.PAUSE): S.PAUSED,  # pausing a paused thread succeeds and changes nothing
    (S.PAUSED, T.RESUME): S.IDLE,
    (S.IDLE, T.RESUME): S.IDLE,  # resume of a thread that is not paused changes nothing
    (S.RUNNING, T.RESUME): S.RUNNING,
    (S.IDLE, T.KILL): S.KILLED,
    (S.RUNNING, T.KILL): S.KILLED,
    (S.PAUSED, T.KILL): S.KILLED,
    (S.RUNNING, T.RECOVER): S.IDLE,  # the dead turn is closed as interrupted on load
}
# Pause of a running thread is not a direct transition: the turn is ended first and lands
# through TURN_END_PAUSED.


def transition(state: ThreadState, trigger: Trigger) -> ThreadState:
    try:
        return TRANSITIONS[(state, trigger)]
    except KeyError:
        raise InvalidState(f"cannot {trigger.value.replace('_', ' ')} a thread that is {state.value}") from None


class InputMode(str, Enum):
    SEND = "send"
    QUEUE = "queue"
    STEER = "steer"


class Disposition(str, Enum):
    STARTED = "started"
    QUEUED = "queued"
    STEERED = "steered"


# (thread state, mode, turn accepting steer) -> disposition. "accepting steer" is False while
# a running turn is being ended (interrupt/pause/kill in progress): a steer can no longer
# join it, so it waits in the queue for the next turn.
_DISPOSITIONS: dict[tuple[ThreadState, InputMode, bool], Disposition] = {}
for _mode in InputMode:
    for _accepting in (True, False):
        _DISPOSITIONS[(S.IDLE, _mode, _accepting)] = Disposition.STARTED
        _DISPOSITIONS[(S.PAUSED, _mode, _accepting)] = Disposition.QUEUED
        _DISPOSITIONS[(S.RUNNING, _mode, _accepting)] = (
            Disposition.STEERED if _mode is InputMode.STEER and _accepting else Disposition.QUEUED
        )
DISPOSITIONS = dict(_DISPOSITIONS)


def input_disposition(
    state: ThreadState, mode: InputMode, *, steer_accepted: bool = True, nothing_ahead: bool = True
) -> Disposition:
    """What an input sent now becomes. An idle thread with something ahead of the input (a
    waiting queue, a compaction in progress) queues it behind that."""
    if state is S.KILLED:
        raise InvalidState("thread is killed: it takes no input")
    disposition = DISPOSITIONS[(state, mode, steer_accepted)]
    if disposition is Disposition.STARTED and not nothing_ahead:
        return Disposition.QUEUED
    return disposition


def parse_mode(value: object) -> InputMode:
    if value is None:
        return InputMode.SEND
    try:
        return InputMode(value)
    except ValueError:
        raise BadRequest(f"mode must be one of send, queue, steer (got {value!r})") from None

