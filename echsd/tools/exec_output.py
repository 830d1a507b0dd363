"""What an exec session shows the model (sans-IO): a bounded buffer, token clipping, the report.

The output of a command arrives in chunks of unknown total size; between two polls it is
kept in a ``HeadTailBuffer`` (the first and last bytes, the count of what was dropped
between). What the model sees is clipped to a token budget the way Codex does it (tokens
estimated at 4 bytes each, head and tail kept, ``…N tokens truncated…`` between, preceded
by ``Total output lines: N``), inside Codex's report::

    Chunk ID: 3f9a1c
    Wall time: 0.0123 seconds
    Process exited with code 0          (or: Process running with session ID 12345)
    Original token count: 3
    Output:
    hi
"""

from __future__ import annotations

import secrets
import signal
from dataclasses import dataclass, field

BYTES_PER_TOKEN = 4
DEFAULT_MAX_OUTPUT_TOKENS = 10_000  # Codex's default; also the ceiling: a call may only lower it
BUFFER_HALF_BYTES = 64 * 1024  # >= half the largest clip, so clips of a buffer stay exact


def approx_tokens(byte_count: int) -> int:
    return -(-byte_count // BYTES_PER_TOKEN)


@dataclass
class Captured:
    """Output taken from a buffer: ``head`` then ``dropped`` bytes not kept, then ``tail``."""

    head: bytes = b""
    tail: bytes = b""
    dropped: int = 0
    lines: int = 0

    @property
    def total_bytes(self) -> int:
        return len(self.head) + self.dropped + len(self.tail)


class HeadTailBuffer:
    """Keeps the first ``half`` and the last ``half`` bytes of a stream, counts the rest."""

    def __init__(self, half: int = BUFFER_HALF_BYTES) -> None:
        self.half = half
        self._reset()

    def _reset(self) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0
        self.newlines = 0
        self.ends_open = False  # the last byte seen is not a newline

    def __bool__(self) -> bool:
        return bool(self.head)

    def append(self, data: bytes) -> None:
        if not data:
            return
        self.newlines += data.count(b"\n")
        self.ends_open = not data.endswith(b"\n")
        room = self.half - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            excess = len(self.tail) - self.half
            if excess > 0:
                del self.tail[:excess]
                self.dropped += excess

    def snapshot(self) -> bytes:
        """What is kept now (head and tail), without taking it."""
        return bytes(self.head + self.tail)

    def take(self) -> Captured:
        taken = Captured(bytes(self.head), bytes(self.tail), self.dropped, self.newlines + (1 if self.ends_open else 0))
        self._reset()
        return taken


def clip(captured: Captured, max_tokens: int) -> str:
    """The captured output as text within ``max_tokens`` (estimated): unchanged when it fits,
    else head and tail with a marker saying how many tokens were cut."""
    budget = max_tokens * BYTES_PER_TOKEN
    whole = captured.head + captured.tail
    if not captured.dropped and len(whole) <= budget:
        return whole.decode("utf-8", "replace")
    front_len = budget // 2
    back_len = budget - front_len
    front_src = captured.head if captured.dropped else whole
    back_src = captured.tail if captured.dropped else whole
    front = front_src[: _char_boundary(front_src, min(front_len, len(front_src)), forward=False)]
    back_from = _char_boundary(back_src, max(len(back_src) - back_len, 0), forward=True)
    if not captured.dropped:
        back_from = max(back_from, len(front))
    back = back_src[back_from:]
    removed = captured.total_bytes - len(front) - len(back)
    text = front.decode("utf-8", "replace") + f"…{approx_tokens(removed)} tokens truncated…" + back.decode("utf-8", "replace")
    return f"Total output lines: {captured.lines}\n\n{text}"


def _char_boundary(data: bytes, at: int, *, forward: bool) -> int:
    """``at`` moved to the start of a UTF-8 character: back to the one it falls in, or
    forward to the next, so that a cut never grows past its budget."""
    step = 1 if forward else -1
    while 0 < at < len(data) and data[at] & 0xC0 == 0x80:
        at += step
    return at


@dataclass
class ExecReport:
    wall_s: float
    captured: Captured
    max_tokens: int
    exit_status: int | None = None  # subprocess convention: negative = killed by that signal
    session_id: int | None = None
    notes: list[str] = field(default_factory=list)
    chunk_id: str = field(default_factory=lambda: secrets.token_hex(3))
    sandbox_denied: str | None = None  # "command": it failed as the sandbox makes commands fail

    @property
    def exit_code(self) -> int | None:
        return self.exit_status if self.exit_status is not None and self.exit_status >= 0 else None

    @property
    def signal(self) -> int | None:
        return -self.exit_status if self.exit_status is not None and self.exit_status < 0 else None

    def status_line(self) -> str:
        if self.session_id is not None:
            return f"Process running with session ID {self.session_id}"
        if self.signal is not None:
            return f"Process killed by signal {self.signal} ({signal_name(self.signal)})"
        return f"Process exited with code {self.exit_code}"

    def render(self) -> str:
        lines = [
            f"Chunk ID: {self.chunk_id}",
            f"Wall time: {self.wall_s:.4f} seconds",
            self.status_line(),
            f"Original token count: {approx_tokens(self.captured.total_bytes)}",
            *(f"Note: {note}" for note in self.notes),
            "Output:",
            clip(self.captured, self.max_tokens),
        ]
        return "\n".join(lines)

    def meta(self) -> dict[str, int | str | None]:
        meta: dict[str, int | str | None] = {"exit_code": self.exit_code, "signal": self.signal, "session_id": self.session_id}
        if self.sandbox_denied is not None:
            meta["sandbox_denied"] = self.sandbox_denied
        return meta


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
