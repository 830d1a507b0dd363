"""The direct path: a message for one connection reaches it and no other, and a closed
connection is forgotten (its close callbacks run, sending to it says so)."""

from __future__ import annotations

from typing import Any

import trio

from echsd.wire.client import connect


async def test_a_direct_message_reaches_one_connection_only(wired: Any) -> None:
    state = wired.settings.state_dir
    closed = trio.Event()
    async with connect(state_dir=state) as other:
        async with connect(state_dir=state) as target:
            peer = wired.peers.get(target.server["connection"])
            assert peer is not None and peer.peer_id != other.server["connection"]
            peer.on_close(closed.set)
            message = {"event": "tool.call", "thread_id": None, "seq": None, "ts": 0.0, "data": {"call_id": "c1"}}
            assert peer.send_direct(message)
            with trio.fail_after(5):
                assert await target.direct_messages.receive() == message
            await other.status()  # anything sent to ``other`` before this answer has arrived
            assert other.direct_messages.statistics().current_buffer_used == 0
            assert len(wired.peers) == 2
        with trio.fail_after(5):
            await closed.wait()
        assert not peer.send_direct(message)
        assert wired.peers.get(peer.peer_id) is None and len(wired.peers) == 1
