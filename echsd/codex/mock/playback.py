"""Play a ``StreamAnswer`` onto a connection: pacing, batching and fault injection.

Without delays everything is rendered at once and written in ~64 KiB batches (one
syscall per batch, not per event); with ``delay_ms`` every delta is flushed, and delta
``k`` leaves ``k * delay_ms`` after the first (on a schedule, so a mock that fell behind
catches up instead of drifting). ``chunks: "event"`` frames every event as its own HTTP
chunk, as real endpoints do (sends still gather them at full speed). Faults strike after
``after_deltas`` deltas: ``drop``/``stall``/``malformed``/``junk`` default to 0 (before the
first event), ``failed``/``incomplete``/``error``/``usage_limit`` default to right after
``response.in_progress``. ``junk`` is the only one the stream survives: a non-JSON
``data:`` line, then the rest as scripted.
"""

from __future__ import annotations

import trio

from echsd.codex.mock.app import StreamAnswer
from echsd.codex.mock.http11 import Connection
from echsd.codex.mock.render import DELTA, MALFORMED_EVENT, PREAMBLE_END, Renderer
from echsd.codex.mock.script import INLINE_FAULTS, STREAM_FAULTS, TERMINAL_FAULTS, Fault

BATCH_BYTES = 65536


class _Batch:
    """Events waiting to be sent: one HTTP chunk per batch, or (``per_event``) per event;
    either way sent in ~64 KiB writes."""

    def __init__(self, conn: Connection, per_event: bool) -> None:
        self.conn = conn
        self.per_event = per_event
        self.parts: list[bytes] = []
        self.size = 0

    async def add(self, data: bytes) -> None:
        self.parts.append(self.conn.frame(data) if self.per_event else data)
        self.size += len(data)
        if self.size >= BATCH_BYTES:
            await self.flush()

    async def flush(self) -> None:
        if self.parts:
            data = b"".join(self.parts)
            self.parts.clear()
            self.size = 0
            await (self.conn.send_framed(data) if self.per_event else self.conn.write(data))


async def play(conn: Connection, answer: StreamAnswer) -> bool:
    """Stream the answer; True when the connection may serve another request."""
    step, fault, renderer = answer.step, answer.fault, answer.renderer
    out = _Batch(conn, per_event=step.chunks == "event")
    await conn.start_stream(renderer.headers())
    if step.ttfb_ms:
        await trio.sleep(step.ttfb_ms / 1000.0)
    if fault is not None and fault.kind in INLINE_FAULTS and not fault.after_deltas:
        await out.add(MALFORMED_EVENT)
        fault = None
    if fault is not None and fault.kind in STREAM_FAULTS and not fault.after_deltas:
        return await _strike(conn, out, renderer, fault)
    delay = step.delay_ms / 1000.0
    deltas = 0
    paced_from = 0.0
    for kind, data in renderer.events():
        if kind == PREAMBLE_END:
            if fault is not None and fault.kind in TERMINAL_FAULTS and fault.after_deltas is None:
                return await _strike(conn, out, renderer, fault)
            continue
        await out.add(data)
        if kind == DELTA:
            deltas += 1
            if fault is not None and deltas == fault.after_deltas:
                if fault.kind in INLINE_FAULTS:
                    await out.add(MALFORMED_EVENT)
                    fault = None
                else:
                    return await _strike(conn, out, renderer, fault)
            if delay:
                await out.flush()
                paced_from = paced_from or trio.current_time()
                await trio.sleep_until(paced_from + deltas * delay)
    await out.flush()
    await conn.end_stream()
    return True


async def _strike(conn: Connection, out: _Batch, renderer: Renderer, fault: Fault) -> bool:
    if fault.kind == "drop":
        await out.flush()
        return False  # the caller closes the socket without ending the chunked body
    if fault.kind == "stall":
        await out.flush()
        await trio.sleep_forever()  # until the client hangs up (or the server stops)
    await out.add(MALFORMED_EVENT if fault.kind == "malformed" else renderer.fault_event(fault))
    await out.flush()
    await conn.end_stream()
    return True
