"""Clients that watch rather than drive: followers that resume by ``since`` and check
every event arrives once and in order; a slow reader; one that never reads; and the
chaos that makes driver connections reconnect.

They speak the wire directly (trio-websocket + the frame codec), so what they check is
the daemon's stream, not the client library's repairs of it.
"""

from __future__ import annotations

import random
import time
from typing import Any

import trio
from trio_websocket import ConnectionClosed, HandshakeError, WebSocketConnection, wrap_client_stream

from bench.soak.checks import last_seq
from bench.soak.state import Slot, Soak
from echsd.wire import codec

MAX_MESSAGE = 256 * 1024 * 1024
FOLLOW_S = (20.0, 90.0)  # a follower's connection lives this long, then it resumes on a new one


async def open_raw(nursery: trio.Nursery, soak: Soak) -> WebSocketConnection:
    """A connection that has said hello."""
    stream = await trio.open_unix_socket(soak.daemon.socket)
    ws = await wrap_client_stream(nursery, stream, "localhost", "/v1", max_message_size=MAX_MESSAGE)
    token = (soak.state_dir / "token").read_text().strip()
    await ws.send_message(codec.encode_request(0, "hello", {"protocol": codec.PROTOCOL_VERSION, "token": token}))
    responses, _ = codec.split_frame(await ws.get_message())
    if not responses or not responses[0].get("ok"):
        raise ConnectionError(f"hello refused: {responses}")
    return ws


async def _session(soak: Soak, body: Any) -> None:
    """Run ``body(ws)`` on fresh connections for as long as the soak runs; a daemon that
    goes away ends the connection, and the next one opens once it is back."""
    while True:
        await soak.wait_up()
        lost = False
        try:
            async with trio.open_nursery() as nursery:
                ws = await open_raw(nursery, soak)
                await body(ws)
                nursery.cancel_scope.cancel()
        except* (OSError, ConnectionClosed, HandshakeError, ConnectionError):
            lost = True
        if lost:
            await trio.sleep(0.5)  # the daemon went away: wait for it to come back


class Follower:
    """Follows some threads, reconnecting every so often and resuming each from the last
    seq it saw: every event must be the next seq (a gap event naming the next range counts)."""

    def __init__(self, soak: Soak, thread_ids: list[str], seed: float) -> None:
        self.soak = soak
        self.cursor = dict.fromkeys(thread_ids, 0)
        self.rng = random.Random(seed)
        self.events = 0
        self.gaps = 0
        self.resumes = 0

    async def run(self) -> None:
        await _session(self.soak, self._follow)

    async def _follow(self, ws: WebSocketConnection) -> None:
        self.resumes += 1
        subscribed = list(self.cursor.items())
        for index, (tid, since) in enumerate(subscribed):
            await ws.send_message(codec.encode_request(index, "subscribe", {"thread_id": tid, "since": since}))
        live: set[str] = set()  # threads whose replay is over: their events are live
        with trio.move_on_after(self.rng.uniform(*FOLLOW_S)):
            while True:
                responses, events = codec.split_frame(await ws.get_message())
                for response in responses:
                    tid, since = subscribed[response["id"]]
                    if response.get("ok"):
                        live.add(tid)
                    elif response["error"]["code"] == "not_found":
                        self.cursor.pop(tid, None)  # deleted by its driver
                    else:  # e.g. since beyond the stored log: the daemon lost what it streamed
                        self.soak.violation("subscribe_refused", thread_id=tid, since=since, error=response["error"])
                arrived = time.time()
                for event in events:
                    self._check(event, arrived if event["thread_id"] in live else None)

    def _check(self, event: dict[str, Any], arrived: float | None) -> None:
        tid = event["thread_id"]
        if tid not in self.cursor:
            return
        if arrived is not None and event["event"] == "turn.delta":
            self.soak.latency.add("delta", arrived - event["ts"])  # the daemon's stamp, same clock
        first = event["data"]["from_seq"] if event["event"] == "events.gap" else event["seq"]
        expected = self.cursor[tid] + 1
        if first != expected:
            self.soak.violation(
                "stream_out_of_order", thread_id=tid, got=first, expected=expected, event=event["event"], resumes=self.resumes
            )
        self.cursor[tid] = max(self.cursor[tid], last_seq(event))
        self.events += 1
        self.gaps += event["event"] == "events.gap"


class SlowReader:
    """Subscribed to every thread, reads a frame every ``PAUSE_S``: it must get gaps, not
    hold the daemon back."""

    PAUSE_S = 0.2

    def __init__(self, soak: Soak) -> None:
        self.soak = soak
        self.frames = 0
        self.events = 0
        self.gaps = 0

    async def run(self) -> None:
        await _session(self.soak, self._read)

    async def _read(self, ws: WebSocketConnection) -> None:
        await ws.send_message(codec.encode_request(1, "subscribe", {"thread_id": "*"}))
        while True:
            _, events = codec.split_frame(await ws.get_message())
            self.frames += 1
            self.events += len(events)
            self.gaps += sum(e["event"] == "events.gap" for e in events)
            await trio.sleep(self.PAUSE_S)  # the slowness is the point


class Stalled:
    """Subscribed to every thread and never reads: its backlog must stay bounded."""

    def __init__(self, soak: Soak) -> None:
        self.soak = soak
        self.connections = 0

    async def run(self) -> None:
        await _session(self.soak, self._stall)

    async def _stall(self, ws: WebSocketConnection) -> None:
        await ws.send_message(codec.encode_request(1, "subscribe", {"thread_id": "*"}))
        self.connections += 1
        generation = self.soak.generation
        while self.soak.generation == generation:  # until the daemon restarts (the socket is dead then)
            await self.soak.wait_change()


async def reconnect_chaos(soak: Soak, slots: list[Slot]) -> None:
    """Every so often one group of drivers gets a fresh connection mid-request."""
    rng = random.Random(soak.rng.random())
    while True:
        await trio.sleep(rng.uniform(20, 60))
        rng.choice(slots).replace()
        soak.actions["reconnect"] += 1
