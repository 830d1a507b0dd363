"""What every listener's connection does the same way: the heartbeat, the outbound budget.

The native wire (``session.py``) and the app-server listener (``appserver/connection.py``)
keep their own framing and request handling; around them they share this shell:

- ``heartbeat``: a ping every ``[tuning] heartbeat_s``; a peer whose pong does not come back
  within ``MISSED_PINGS`` heartbeats is gone (a half-open connection must not keep its
  subscriptions, feeds or tools for ever): the connection closes.
- ``outbound_bytes``: what a connection may hold unsent, in bytes (``[tuning]
  client_queue_bytes``): past it the native wire drops events (an ``events.gap`` follows),
  the app-server drops deltas first and then closes the connection.
"""

from __future__ import annotations

from typing import Any, Callable

import trio
from trio_websocket import ConnectionClosed

MISSED_PINGS = 3


async def heartbeat(ws: Any, interval_s: float, scope: trio.CancelScope, on_silent: Callable[[], None]) -> None:
    """Ping ``ws`` every ``interval_s``; when the peer stays silent, call ``on_silent`` and
    cancel ``scope`` (the connection's tasks), as when the connection closes."""
    try:
        while True:
            await trio.sleep(interval_s)
            with trio.move_on_after(interval_s * MISSED_PINGS) as waiting:
                await ws.ping()
            if waiting.cancelled_caught:
                on_silent()
                scope.cancel()
                return
    except ConnectionClosed:
        scope.cancel()


def outbound_bytes(tuning: Any) -> tuple[int, int]:
    """(soft, hard): unsent bytes past which droppable output is left out, and past which
    nothing more is queued (the same budget for every listener)."""
    hard = int(tuning.client_queue_bytes)
    return hard // 4, hard
