"""Sans-IO Server-Sent Events decoder: bytes in, ``SseEvent`` out.

Follows the WHATWG event-stream rules that matter for the Responses API: lines end in
``\\n``, ``\\r\\n`` or ``\\r`` (also when split across chunks), ``:`` starts a comment,
``data`` lines of one event are joined with ``\\n``, one space after the colon is dropped,
an event is dispatched at a blank line only if it had a ``data`` field. ``id`` and
``retry`` are ignored (we never reconnect with ``Last-Event-ID``). Data stays ``bytes`` so
the reducer can hand it straight to orjson. No sockets, clocks or files: the caller feeds
whatever chunks arrive and calls ``close()`` at end of stream.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SseEvent:
    event: str  # the ``event:`` field, "message" when absent
    data: bytes


class SseDecoder:
    """Incremental decoder; the result never depends on how the input was chunked."""

    __slots__ = ("_pending", "_trailing_cr", "_event", "_data")

    def __init__(self) -> None:
        self._pending: list[bytes] = []  # pieces of the current unterminated line
        self._trailing_cr = False  # last chunk ended in "\r": a leading "\n" is part of it
        self._event = ""
        self._data: list[bytes] | None = None

    def feed(self, chunk: bytes) -> list[SseEvent]:
        if self._trailing_cr and chunk:
            self._trailing_cr = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        if b"\r" in chunk:
            self._trailing_cr = chunk.endswith(b"\r")
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if b"\n" not in chunk:
            if chunk:
                self._pending.append(chunk)
            return []
        if self._pending:
            self._pending.append(chunk)
            chunk = b"".join(self._pending)
            self._pending.clear()
        lines = chunk.split(b"\n")
        rest = lines.pop()
        if rest:
            self._pending.append(rest)
        out: list[SseEvent] = []
        for line in lines:
            self._line(line, out)
        return out

    def close(self) -> list[SseEvent]:
        """End of stream. Lenient: a last event missing its blank line is still dispatched."""
        out: list[SseEvent] = []
        if self._pending:
            line = b"".join(self._pending)
            self._pending.clear()
            self._line(line, out)
        self._line(b"", out)
        return out

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
