"""Sans-IO Server-Sent Events decoder: bytes in, ``SseEvent`` out.

Follows the WHATWG event-stream rules that matter for the Responses API: lines end in
``\\n``, ``\\r\\n`` or ``\\r`` (also when split across chunks), ``:`` starts a comment,
``data`` lines of one event are joined with ``\\n``, one space after the colon is dropped,
an event is dispatched at a blank line only if it had a ``data`` field. ``id`` and
``retry`` are ignored (we never reconnect with ``Last-Event-ID``). Data stays ``bytes`` so
the reducer can hand it straight to orjson. No sockets, clocks or files: the caller feeds
whatever chunks arrive and calls ``close()`` at end of stream.

The hot path works on whole events, split on bytes: what follows the last blank line
waits for the next chunk (found in a linear scan, never rescanned: CPython searches for a
two-byte separator such as the blank line at a fraction of ``memchr``'s speed, ~8 ns a
byte, so the text of a long event is searched only for single newlines), and an event of the
usual two lines ``event: NAME`` / ``data: JSON`` is cut out directly; anything else goes
through the line rules one line at a time. An event may not exceed ``MAX_EVENT_BYTES``.
"""

from __future__ import annotations

from typing import NamedTuple

MAX_EVENT_BYTES = 64 << 20  # one event's text: a function call's whole arguments fit many times


class SseEvent(NamedTuple):
    event: str  # the ``event:`` field, "message" when absent
    data: bytes


class SseTooLarge(Exception):
    """An event (its unterminated text) passed ``MAX_EVENT_BYTES``."""


class SseDecoder:
    """Incremental decoder; the result never depends on how the input was chunked."""

    __slots__ = ("_pending", "_pending_size", "_trailing_cr", "_event", "_data", "_names")

    def __init__(self) -> None:
        self._pending: list[bytes] = []  # text after the last blank line, not yet decoded
        self._pending_size = 0
        self._trailing_cr = False  # last chunk ended in "\r": a leading "\n" is part of it
        self._event = ""
        self._data: list[bytes] | None = None
        self._names: dict[bytes, str] = {}  # event names seen, decoded once

    def feed(self, chunk: bytes) -> list[SseEvent]:
        if self._trailing_cr and chunk:
            self._trailing_cr = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        if b"\r" in chunk:
            self._trailing_cr = chunk.endswith(b"\r")
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if b"\n" not in chunk:  # (memchr: the chunks inside a long event hold no newline at all)
            return self._wait(chunk)
        out: list[SseEvent] = []
        if self._pending:
            chunk = self._end_pending(chunk, out)
            if chunk is None:
                return out
        end = chunk.rfind(b"\n\n")
        if end < 0:
            self._wait(chunk)
            return out
        if end + 2 < len(chunk):
            self._wait(chunk[end + 2 :])
        for block in chunk[:end].split(b"\n\n"):
            self._block(block, out)
        return out

    def _end_pending(self, chunk: bytes, out: list[SseEvent]) -> bytes | None:
        """The pending event, if a blank line in ``chunk`` (or straddling into it) ends it:
        its text is joined in one copy and decoded; returns what follows the blank line,
        or None while the event goes on. The pending text holds no blank line, so it is
        never searched again."""
        pending = self._pending
        if chunk[:1] == b"\n" and pending[-1][-1:] == b"\n":
            pending[-1] = pending[-1][:-1]
            rest = chunk[1:]
        else:
            cut = chunk.find(b"\n\n")
            if cut < 0:
                self._wait(chunk)
                return None
            pending.append(chunk[:cut])
            rest = chunk[cut + 2 :]
        block = b"".join(pending)
        pending.clear()
        self._pending_size = 0
        self._block(block, out)
        return rest if rest else None

    def close(self) -> list[SseEvent]:
        """End of stream. Lenient: a last event missing its blank line is still dispatched."""
        out: list[SseEvent] = []
        if self._pending:
            rest = b"".join(self._pending)
            self._pending.clear()
            self._pending_size = 0
            for line in rest.split(b"\n"):
                self._line(line, out)
        self._line(b"", out)
        return out

    def _wait(self, text: bytes) -> list[SseEvent]:
        if text:
            self._pending.append(text)
            self._pending_size += len(text)
            if self._pending_size > MAX_EVENT_BYTES:
                raise SseTooLarge(f"an SSE event longer than {MAX_EVENT_BYTES:,} bytes")
        return []

    def _block(self, block: bytes, out: list[SseEvent]) -> None:
        """The text of one event (between blank lines), then the blank line ending it."""
        if len(block) > MAX_EVENT_BYTES:
            raise SseTooLarge(f"an SSE event longer than {MAX_EVENT_BYTES:,} bytes")
        if self._data is None and not self._event and block.startswith(b"event: "):
            newline = block.find(b"\n")
            if newline > 0 and block.startswith(b"data: ", newline + 1) and block.find(b"\n", newline + 1) < 0:
                raw = block[7:newline]
                name = self._names.get(raw)
                if name is None:
                    name = raw.decode("utf-8", "replace")
                    if len(self._names) < 64:
                        self._names[raw] = name
                out.append(SseEvent(name or "message", block[newline + 7 :]))
                return
        for line in block.split(b"\n"):
            self._line(line, out)
        self._line(b"", out)

    def _line(self, line: bytes, out: list[SseEvent]) -> None:
        if line.startswith(b"data:"):
            value = line[6:] if line[5:6] == b" " else line[5:]
            if self._data is None:
                self._data = [value]
            else:
                self._data.append(value)
            return
        if not line:
            if self._data is not None:
                data = self._data[0] if len(self._data) == 1 else b"\n".join(self._data)
                out.append(SseEvent(self._event or "message", data))
            self._data = None
            self._event = ""
            return
        if line[:1] == b":":
            return
        name, sep, value = line.partition(b":")
        if sep and value[:1] == b" ":
            value = value[1:]
        if name == b"event":
            self._event = value.decode("utf-8", "replace")
        elif name == b"data":  # "data" without a colon: an empty data line
            if self._data is None:
                self._data = [b""]
            else:
                self._data.append(b"")
