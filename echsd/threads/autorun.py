"""Autonomous runs (sans-IO): a thread continues on its own for up to N turns.

``thread.send {steps: N}`` (or the thread's ``steps`` config) makes the input the start of
a run: after each turn that completes, a continuation input is queued ahead of everything
else, until the model ends a reply with the finish marker (``echsd.done_marker``: only a
trailing one counts), N turns have run, or a turn ends any other way (interrupt, pause,
kill, error). Each is a turn of its own; ``run.finished`` says how the run ended. The
marker is cut from the turn's final text (and clients cut it from what they show).
"""

from __future__ import annotations

from typing import Any

from echsd.done_marker import DONE_MARKER

MAX_STEPS = 100


def instructions_note(run: dict[str, Any]) -> str:
    return (
        f"\n\nYou are working autonomously: this is turn {run['turns']} of at most {run['steps']}, and no one "
        f"answers questions in between. Keep going until the task is complete; then end your reply with "
        f"{DONE_MARKER}."
    )


def continuation_text(run: dict[str, Any]) -> str:
    return f"Continue with the task (autonomous turn {run['turns'] + 1} of {run['steps']}; end your reply with {DONE_MARKER} when it is complete)."


def end_reason(status: str, reason: str | None, done: bool) -> str:
    """Why a run ended: done | steps | interrupt | pause | kill | shutdown | error."""
    if done:
        return "done"
    if status == "completed":
        return "steps"
    return reason or status
