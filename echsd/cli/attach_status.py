"""The live status line of ``echs attach``, sans-IO: what the running turn is doing now.

Completed lines scroll above the input line; this line sits just above the prompt and is
redrawn several times a second while a turn runs: a spinner, the turn's elapsed time, and
then the streamed text of the line not yet complete, or why nothing streams (a model
request being retried, with its countdown; a turn waiting for a slot). So a slow model
never looks like a frozen screen. Fed the same events as ``AttachView``; the clock is
passed in.
"""

from __future__ import annotations

from typing import Any

from echsd.cli.render import duration, one_line
from echsd.cli.render_events import waiting_text

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
FRAMES_PER_S = 5
ENDED = ("turn.completed", "turn.interrupted", "turn.error")
ACTIVE = ("turn.delta", "turn.reasoning_delta", "tool.started", "tool.output", "tool.completed", "item.completed")


class TurnStatus:
    def __init__(self) -> None:
        self.started_at: float | None = None  # the running turn's start (daemon clock)
        self._retry: tuple[dict[str, Any], float] | None = None  # the last turn.retry and its ts
        self._waiting: dict[str, Any] | None = None

    @property
    def running(self) -> bool:
        return self.started_at is not None

    def feed(self, event: dict[str, Any]) -> None:
        kind = event.get("event")
        data = event.get("data") or {}
        ts = float(event.get("ts") or 0)
        if kind == "turn.started":
            self.started_at, self._retry, self._waiting = ts, None, None
        elif kind in ENDED or (kind == "thread.state" and data.get("state") != "running"):
            self.started_at, self._retry, self._waiting = None, None, None
        elif kind == "turn.retry":
            self._retry, self._waiting = (data, ts), None
        elif kind == "turn.waiting":
            self._waiting = data
        elif kind in ACTIVE:
            self._retry = self._waiting = None  # the turn moves again

    def line(self, now: float, partial: str, width: int) -> str | None:
        """The status line at ``now`` (None when no turn runs), at most ``width`` wide."""
        if self.started_at is None:
            return None
        spinner = SPINNER[int(now * FRAMES_PER_S) % len(SPINNER)]
        head = f"{spinner} running {duration(now - self.started_at, whole=True)}"
        if self._waiting is not None:
            detail = waiting_text("turn.waiting", self._waiting)
        elif self._retry is not None:
            data, ts = self._retry
            left = max(0.0, ts + float(data.get("delay_s") or 0) - now)
            detail = waiting_text("turn.retry", data, left_s=left)
        else:
            detail = partial
        if not detail:
            return head
        room = max(10, width - len(head) - 3)
        flat = one_line(detail, 10**6)
        return f"{head} · {flat if len(flat) <= room else '…' + flat[len(flat) - room + 1 :]}"

