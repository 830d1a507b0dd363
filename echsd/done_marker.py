"""The finish marker of autonomous runs (``thread.send {steps}``), sans-IO.

A reply whose text *ends* with ``%%DONE%%`` (trailing whitespace aside) ends the run; the
marker anywhere else is just text (a reply quoting the instructions goes on). The marker is
never shown nor kept as the turn's final text: ``split_done`` cuts it from a whole text,
``MarkerHold`` from a text streamed in deltas, holding back only a tail that may still
become the marker. Shared by the daemon (which decides) and the CLI (which shows), so both
read a reply the same way.
"""

from __future__ import annotations

DONE_MARKER = "%%DONE%%"


def split_done(text: str) -> tuple[str, bool]:
    """The text without a trailing finish marker (and the blanks before it), and whether
    there was one."""
    body = text.rstrip()
    if not body.endswith(DONE_MARKER):
        return text, False
    return body[: -len(DONE_MARKER)].rstrip(), True


def _held_from(text: str) -> int:
    """Where the tail that could still become a trailing marker starts (``len(text)``: none)."""
    body = text.rstrip()
    start = len(body)
    if body.endswith(DONE_MARKER):
        start -= len(DONE_MARKER)
    else:
        for size in range(min(len(DONE_MARKER) - 1, len(body)), 0, -1):
            if body.endswith(DONE_MARKER[:size]):
                start -= size
                break
    while start > 0 and text[start - 1].isspace():
        start -= 1
    return start


class MarkerHold:
    """One streamed message: ``feed`` returns what may be shown now; ``end`` what is left
    once the message is complete, without a trailing marker."""

    def __init__(self) -> None:
        self._held = ""

    def feed(self, delta: str) -> str:
        text = self._held + delta
        cut = _held_from(text)
        self._held = text[cut:]
        return text[:cut]

    def end(self) -> str:
        rest, self._held = self._held, ""
        body, done = split_done(rest)
        return body if done else rest
