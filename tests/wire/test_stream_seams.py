"""Event streams at awkward seams: an earlier subscription on the same client, a lost
daemon without reconnecting, and last_seq of threads not loaded since a restart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from echsd.wire.client import WireError, connect
from tests.helpers import mock_directive
from tests.wire.helpers import start_daemon, stop_daemon


async def test_stream_after_an_earlier_subscription_misses_nothing(client: Any, wired: Any) -> None:
    state = wired.settings.state_dir
    async with connect(state_dir=state) as watcher:
        tid = (await client.create_thread(cwd=str(state)))["thread_id"]
        await client.send(tid, "first")
        first_done = await _wait_idle(watcher, tid)
        await client.subscribe(tid)  # an earlier, live subscription on the same client
        await client.send(tid, mock_directive({"text": " ".join(["w"] * 400), "deltas": 400, "delay_ms": 2}))
        stream = client.events(tid, since=first_done)
        with trio.fail_after(15):
            await stream._wakeup.wait()  # live events of the earlier subscription are queued
        seqs: list[int] = []
        async with stream:
            with trio.fail_after(15):
                async for event in stream:
                    seqs.append(event["seq"])
                    if event["event"] == "turn.completed":
                        break
    assert seqs == list(range(first_done + 1, first_done + 1 + len(seqs)))
    assert len(seqs) > 400


async def test_stream_without_reconnect_fails_fast(tmp_path: Path, mock_upstream: Any, nursery: trio.Nursery) -> None:
    daemon = await start_daemon(nursery, tmp_path / "state", mock_upstream.base_url)
    async with connect(state_dir=daemon.settings.state_dir) as client:
        tid = (await client.create_thread(cwd=str(tmp_path)))["thread_id"]
        async with client.events(tid, reconnect=False) as stream:
            first = await stream.__anext__()
            assert first["event"] == "thread.created"
            await stop_daemon(daemon)
            with trio.fail_after(10), pytest.raises(WireError) as info:
                async for _event in stream:
                    pass
    assert info.value.code in ("connection_lost", "unavailable")


async def test_last_seq_known_before_a_thread_is_loaded(tmp_path: Path, mock_upstream: Any, nursery: trio.Nursery) -> None:
    state = tmp_path / "state"
    daemon = await start_daemon(nursery, state, mock_upstream.base_url)
    async with connect(state_dir=state) as client:
        tid = (await client.create_thread(cwd=str(tmp_path)))["thread_id"]
        await client.send(tid, "hello")
        before = await _wait_idle(client, tid)
    await stop_daemon(daemon)
    again = await start_daemon(nursery, state, mock_upstream.base_url)
    async with connect(state_dir=state) as client:
        assert (await client.get_thread(tid))["last_seq"] == before
        assert all(t["last_seq"] is not None for t in await client.list_threads())
    await stop_daemon(again)


async def _wait_idle(client: Any, tid: str) -> int:
    """The thread's last seq once its turn has completed."""
    async with client.events(tid) as stream:
        with trio.fail_after(15):
            async for event in stream:
                if event["event"] == "turn.completed":
                    break
    return int((await client.get_thread(tid))["last_seq"])


async def test_stream_without_reconnect_fails_fast_if_lost_before_subscribing(
    tmp_path: Path, mock_upstream: Any, nursery: trio.Nursery
) -> None:
    daemon = await start_daemon(nursery, tmp_path / "state", mock_upstream.base_url)
    async with connect(state_dir=daemon.settings.state_dir) as client:
        tid = (await client.create_thread(cwd=str(tmp_path)))["thread_id"]
        stream = client.events(tid, reconnect=False)
        await stop_daemon(daemon)  # gone before the stream's first subscribe
        with trio.fail_after(10), pytest.raises(WireError):
            await stream.__anext__()
