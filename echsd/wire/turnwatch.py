"""Following the turn that delivers one input, as ``echs send --wait`` and the MCP door do.

Theory of operation. Before sending, a client subscribes and notes the thread's last seq S;
every event caused by its input then has a seq above S, so following ``events(since=S)``
misses nothing however fast the turn runs. (An input sent with a ``client_msg_id`` may be a
repeat that was delivered long ago: then follow from seq 0.) ``TurnWatch`` is the sans-IO
core: it waits for ``input.delivered`` (or ``input.dropped``) carrying the input's id,
learns the turn id from it, and from then on accepts only that turn's events until its
terminal event. A queued input thus skips the turns before it; a steered input joins the
running turn, whose end is its own. An input that starts an autonomous run (``run``) is
followed through every turn of the run (they run back to back) until ``run.finished``
names it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

TERMINAL = ("turn.completed", "turn.interrupted", "turn.error")


@dataclass
class TurnWatch:
    input_id: str
    run: bool = False  # the input starts an autonomous run: wait for its run.finished
    turn_id: str | None = None
    outcome: str | None = None  # the terminal event type, or "input.dropped" / "thread.killed"
    final: dict[str, Any] = field(default_factory=dict)  # the event that ended the wait

    @property
    def done(self) -> bool:
        return self.outcome is not None

    def accept(self, event: dict[str, Any]) -> bool:
        """Whether ``event`` belongs to the wait (and should be shown); updates the outcome."""
        kind = event.get("event")
        data = event.get("data") or {}
        if self.turn_id is None:
            if data.get("input_id") != self.input_id:
                return False
            if kind == "input.delivered":
                self.turn_id = data.get("turn_id")
            elif kind == "input.dropped":
                self._end(event)
            return kind in ("input.queued", "input.delivered", "input.dropped")
        if kind == "thread.killed":  # the turn's own end comes first; this is a backstop
            self._end(event)
            return True
        if kind == "turn.error" and data.get("turn_id") is None:  # a worker crash ends the turn too
            self._end(event)
            return True
        if kind == "events.gap":  # events of our turn the log no longer holds (retention): say so
            return True
        if self.run:
            if kind == "run.finished" and data.get("input_id") == self.input_id:
                self._end(event)
                return True
            if kind == "input.delivered":  # the run's next turn (its continuation input)
                self.turn_id = data.get("turn_id")
                return True
            return data.get("turn_id") == self.turn_id
        if data.get("turn_id") != self.turn_id:
            return False
        if kind in TERMINAL:
            self._end(event)
        return True

    def _end(self, event: dict[str, Any]) -> None:
        self.outcome = str(event.get("event"))
        self.final = event
