"""Text arguments checked before anything is sent: valid UTF-8 (the wire carries nothing
else), and for a message, not empty and within the daemon's limit.

A bad value is a usage error (exit 2) naming the argument, never a traceback from the
encoder or a frame the daemon has to refuse. Arguments come from argv, which Python
decodes with ``surrogateescape``: a byte that is not UTF-8 arrives as a lone surrogate.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from echsd.wire.params import MAX_NAME_CHARS, MAX_TEXT_CHARS

STDIN = "-"


def utf8_problem(text: str) -> str | None:
    """Why ``text`` cannot be sent as UTF-8 (naming the first bad byte), or None."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raw = text[exc.start : exc.end].encode("utf-8", "surrogateescape")
        return f"it is not valid UTF-8 (byte 0x{raw[0]:02x} at character {exc.start})"
    return None


class Utf8Text(click.ParamType):
    """Any string that is valid UTF-8."""

    name = "text"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value)
        problem = utf8_problem(text)
        if problem is not None:
            self.fail(problem, param, ctx)
        return text


class NameText(Utf8Text):
    """A name the daemon keys things by (an idempotency key): not blank, no control
    characters, at most ``echsd.wire.params.MAX_NAME_CHARS`` characters."""

    name = "name"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = super().convert(value, param, ctx)
        if not text.strip():
            self.fail("it is empty", param, ctx)
        if any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
            self.fail("it contains control characters", param, ctx)
        if len(text) > MAX_NAME_CHARS:
            self.fail(f"it is {len(text):,} characters long; the daemon takes at most {MAX_NAME_CHARS}", param, ctx)
        return text


class MessageText(Utf8Text):
    """A message for a thread: ``-`` reads standard input (as UTF-8); must not be blank
    and must fit the daemon's limit (``echsd.wire.params.MAX_TEXT_CHARS``)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        where = ""
        if value == STDIN:
            where = "standard input: "
            data = sys.stdin.buffer.read()
            try:
                value = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                self.fail(f"{where}it is not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})", param, ctx)
        text = super().convert(value, param, ctx)
        if not text.strip():
            self.fail(f"{where}the message is empty", param, ctx)
        if len(text) > MAX_TEXT_CHARS:
            self.fail(f"{where}the message is {len(text):,} characters long; the daemon takes at most {MAX_TEXT_CHARS:,}", param, ctx)
        return text


UTF8 = Utf8Text()
NAME = NameText()
MESSAGE = MessageText()
