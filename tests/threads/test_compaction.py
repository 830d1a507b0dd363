"""Compaction waits on the network outside the actor's mailbox: control answers at once
while it is stalled at the upstream, and a cancelled compaction changes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

from echsd.daemon import Daemon
from echsd.wire.client import WireError, connect
from tests.helpers import Watch, conversation, make_settings

PROMPT_S = 1.0  # "well under a second": what a stalled compaction may cost a control request


class BlackHole:
    """An upstream that accepts requests and never answers (a stalled compaction call)."""

    def __init__(self) -> None:
        self.port = 0
        self.requests = 0
        self.arrived = trio.Event()

    async def serve(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        task_status.started()
        await trio.serve_listeners(self._swallow, listeners)

    async def _swallow(self, stream: trio.SocketStream) -> None:
        while await stream.receive_some(65536):
            self.requests += 1
            self.arrived.set()


async def _history_with_one_turn(state: Path, base_url: str, workdir: Path, nursery: trio.Nursery) -> str:
    daemon = Daemon(make_settings(state, base_url))
    await nursery.start(daemon.run)
    thread_id = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    async with Watch(daemon, thread_id) as watch:
        await daemon.ops.send(thread_id, "remember this")
        await watch.wait_type("turn.completed")
    daemon.request_stop()
    await daemon.wait_stopped()
    return thread_id


class Outcome:
    def __init__(self) -> None:
        self.value: Any = None
        self.done = trio.Event()

    async def get(self) -> Any:
        with trio.fail_after(5):
            await self.done.wait()
        return self.value


async def _stalled_compaction(client: Any, thread_id: str, hole: BlackHole, nursery: trio.Nursery) -> Outcome:
    outcome = Outcome()

    async def compact() -> None:
        try:
            outcome.value = await client.compact(thread_id)
        except WireError as exc:
            outcome.value = exc
        outcome.done.set()

    hole.arrived = trio.Event()
    nursery.start_soon(compact)
    with trio.fail_after(10):
        await hole.arrived.wait()  # the compaction request is at the upstream, unanswered
    return outcome


async def test_interrupt_and_kill_answer_at_once_while_compaction_stalls(tmp_path: Path, mock_upstream: Any, nursery: trio.Nursery, workdir: Path) -> None:
    state = tmp_path / "state"
    thread_id = await _history_with_one_turn(state, mock_upstream.base_url, workdir, nursery)
    hole = BlackHole()
    await nursery.start(hole.serve)
    daemon = Daemon(make_settings(state, f"http://127.0.0.1:{hole.port}/v1"))
    await nursery.start(daemon.run)
    async with connect(state_dir=state) as client:
        history = await client.history(thread_id)
        assert len(conversation(history)) == 2

        outcome = await _stalled_compaction(client, thread_id, hole, nursery)
        assert (await client.get_thread(thread_id)).get("compacting") is True
        started = trio.current_time()
        answer = await client.interrupt(thread_id)
        assert trio.current_time() - started < PROMPT_S
        assert answer["interrupted"] is True and answer["cancelled"] == "compaction"
        failed = await outcome.get()
        assert isinstance(failed, WireError) and failed.code == "conflict", failed
        assert await client.history(thread_id) == history
        assert "compacting" not in await client.get_thread(thread_id)

        outcome = await _stalled_compaction(client, thread_id, hole, nursery)
        started = trio.current_time()
        killed = await client.kill(thread_id)
        assert trio.current_time() - started < PROMPT_S
        assert killed["killed"] == [thread_id] and killed["state"] == "killed"
        failed = await outcome.get()
        assert isinstance(failed, WireError) and failed.code == "conflict", failed
        assert await client.history(thread_id) == history
    daemon.request_stop()
    await daemon.wait_stopped()
