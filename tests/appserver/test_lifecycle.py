"""Connections come and go: threads a client started and never used are deleted when it
leaves (unless someone else has them open); a peer that stops answering pings is dropped."""

from __future__ import annotations

import json
from typing import Any

import trio
from wsproto.events import TextMessage

from tests.appserver.helpers import app_client, eventually, half_open_client, start_daemon
from tests.helpers import Watch, mock_directive


def presence(appd: Any) -> Any:
    return appd.app_server.context.presence


def exists(appd: Any, thread_id: str) -> bool:
    return appd.supervisor.local(thread_id) is not None


async def test_a_thread_started_and_never_used_goes_when_its_client_leaves(appd: Any) -> None:
    async with app_client(appd) as client:
        await client.initialize()
        unused = (await client.start_thread())["thread"]["name"]
        used = (await client.start_thread())["thread"]
        await client.run_turn(used["id"], "keep me")
        await client.notification("turn/completed")
        assert exists(appd, unused)
    await eventually(lambda: not exists(appd, unused))
    assert exists(appd, used["name"])
    async with app_client(appd) as again:  # what `codex --remote ... resume thr_...` does
        await again.initialize()
        resumed = await again.call("thread/resume", {"threadId": used["name"], "excludeTurns": True})
        assert resumed["thread"]["id"] == used["id"]
        [turn] = (await again.call("thread/turns/list", {"threadId": used["id"], "itemsView": "full"}))["data"]
        assert turn["items"][0]["content"][0]["text"] == "keep me"


async def test_a_thread_someone_else_has_open_stays(appd: Any) -> None:
    async with app_client(appd) as watcher:
        await watcher.initialize()
        async with app_client(appd) as starter:
            await starter.initialize()
            thread = (await starter.start_thread())["thread"]
            await watcher.call("thread/resume", {"threadId": thread["id"], "excludeTurns": True})
        await eventually(lambda: len(presence(appd).connections) == 1)  # the starter is gone
        assert exists(appd, thread["name"])
    await eventually(lambda: not presence(appd).connections)
    assert exists(appd, thread["name"])  # the watcher never started it


async def test_a_thread_used_through_echs_stays(appd: Any) -> None:
    async with app_client(appd) as client:
        await client.initialize()
        thread = (await client.start_thread())["thread"]["name"]
        async with Watch(appd, thread) as watch:
            await appd.ops.send(thread, "from echs")
            await watch.wait_type("turn.completed")
    await eventually(lambda: not presence(appd).connections)
    assert exists(appd, thread)


async def test_a_peer_that_answers_no_ping_is_dropped(tmp_path: Any, mock_upstream: Any, nursery: Any) -> None:
    daemon = await start_daemon(nursery, tmp_path / "state", mock_upstream.base_url, tuning={"heartbeat_s": 0.2})
    async with half_open_client(daemon) as dead, app_client(daemon) as healthy:
        await healthy.initialize()
        await dead.call(1, "initialize", {"clientInfo": {"name": "codex-tui", "version": "0.169.0"}})
        started = await dead.call(2, "thread/start", {})
        thread = started["result"]["thread"]["name"]
        assert presence(daemon).watched(thread)
        with trio.fail_after(15):
            await dead.closed_by_server()
        assert dead.pings >= 1
        await eventually(lambda: not exists(daemon, thread))  # it left without using its thread
        assert not presence(daemon).watched(thread)
        assert (await healthy.call("account/read", {}))["account"] is None  # a client that pongs stays
        daemon.request_stop()  # before the client closes: trio-websocket cannot pong while closing
        with trio.fail_after(15):
            await daemon.wait_stopped()


async def test_a_client_that_stops_reading_is_bounded_by_client_queue_bytes(tmp_path: Any, mock_upstream: Any, nursery: Any) -> None:
    """The app-server's unsent output is bounded like the native wire's ([tuning]
    client_queue_bytes): past it the connection is closed, the daemon's memory stays bounded."""
    daemon = await start_daemon(nursery, tmp_path / "state", mock_upstream.base_url, tuning={"client_queue_bytes": 1024 * 1024})
    big = mock_directive({"repeat": {"chunk": "x" * 1024, "count": 3072}})  # a 3 MiB reply: its item/completed is 3 MiB
    async with half_open_client(daemon) as reader, app_client(daemon) as other:
        await reader.call(1, "initialize", {"clientInfo": {"name": "codex-tui", "version": "0.169.0"}})
        thread = (await reader.call(2, "thread/start", {}))["result"]["thread"]
        message = {"id": 3, "method": "turn/start", "params": {"threadId": thread["id"], "input": [{"type": "text", "text": big, "text_elements": []}]}}
        await reader.stream.send_all(reader.ws.send(TextMessage(data=json.dumps(message))))  # and read no more
        watch_id = thread["name"]
        async with Watch(daemon, watch_id) as watch:
            await watch.wait_type("turn.completed", timeout=30)
        await other.initialize()
        with trio.fail_after(15):
            await reader.closed_by_server()  # what it had not read was dropped with it
