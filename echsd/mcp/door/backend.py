"""What the MCP door does to echsd, as a client of the daemon over the wire (like ``echs``).

Every call opens a connection of its own (a unix socket connection and a ``hello``: about a
millisecond), so calls and waits run side by side, and a daemon restarted while the MCP
client stays connected is simply reached again by the next call. Nothing here holds thread
state: the threads live in the daemon and outlive the MCP client.

A send with ``wait`` follows the turn that takes its input exactly as ``echs send --wait``
does (``TurnWatch``); ``wait`` settles a thread when its work status (below) is no longer
``running``, re-read after each of its turns ends.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Sequence

import trio

from echsd.wire.turnwatch import TurnWatch

if TYPE_CHECKING:
    from echsd.wire.client import Client

Connect = Callable[[], AbstractAsyncContextManager["Client"]]
Progress = Callable[[str], Awaitable[None]]  # a line saying what the wait sees now
TERMINAL_STATUS = {"turn.completed": "completed", "turn.interrupted": "interrupted", "turn.error": "error"}
TURN_ENDS = ("turn.completed", "turn.interrupted", "turn.error", "thread.killed", "thread.state")
HEARTBEAT_S = 10.0  # a wait says it is still waiting at least this often


def work_status(thread: dict[str, Any]) -> str:
    """Where a thread's work stands: running, paused, killed, or how its last turn ended
    (completed, interrupted, error), or idle if it never ran."""
    state = thread.get("state")
    if state == "killed":
        return "killed"
    if state == "running" or (state == "idle" and thread.get("queued")):
        return "running"
    if state == "paused":
        return "paused"
    return str((thread.get("last_turn") or {}).get("status") or "idle")


def summary(thread: dict[str, Any]) -> dict[str, Any]:
    """A thread as the door shows it: what a caller needs to follow up on it."""
    config = thread.get("config") or {}
    last = thread.get("last_turn") or {}
    return {
        "thread_id": thread.get("thread_id"),
        "name": thread.get("name"),
        "state": thread.get("state"),
        "status": work_status(thread),
        "final_answer": last.get("final_text") or "",
        "queued": thread.get("queued", 0),
        "parent": thread.get("parent"),
        "children": thread.get("children", []),
        "cwd": config.get("cwd"),
        "model": config.get("model"),
        "created_at": thread.get("created_at"),
    }


_LINES: dict[str, Callable[[dict[str, Any]], str]] = {
    "turn.started": lambda data: "turn started",
    "input.delivered": lambda data: f"the message is being worked on (turn {data.get('turn_id')})",
    "input.queued": lambda data: "the message waits in the queue",
    "tool.started": lambda data: f"running {data.get('name')}",
    "approval.requested": lambda data: f"waiting for approval of {data.get('tool')} (echs approve {data.get('request_id')})",
    "turn.retry": lambda data: f"the model request is retried (attempt {data.get('attempt')})",
    **{kind: (lambda data, status=status: f"turn {status}") for kind, status in TERMINAL_STATUS.items()},
}


def describe_event(event: dict[str, Any]) -> str | None:
    """A progress line for an event worth telling the waiting caller about."""
    line = _LINES.get(str(event.get("event")))
    return None if line is None else f"{event.get('thread_id')}: {line(event.get('data') or {})}"


@dataclass
class WireBackend:
    connect: Connect  # a new connection to the daemon

    async def create(self, params: dict[str, Any]) -> dict[str, Any]:
        async with self.connect() as client:
            return summary(await client.create_thread(**params))

    async def send(self, thread_id: str, text: str, mode: str, wait: bool, timeout_s: float, progress: Progress) -> dict[str, Any]:
        """Send; with ``wait``, follow the turn that takes the input to its end (or the timeout)."""
        async with self.connect() as client:
            if not wait:
                ack = await client.send(thread_id, text, mode=mode)
                return {**ack, "status": "sent"}
            since = int((await client.get_thread(thread_id)).get("last_seq") or 0)
            async with client.events(thread_id, since=since, reconnect=False) as stream:
                ack = await client.send(thread_id, text, mode=mode)
                watch = TurnWatch(str(ack["input_id"]))
                with trio.move_on_after(timeout_s):
                    await _follow(stream, watch, progress)
        result: dict[str, Any] = {**ack, "turn_id": watch.turn_id}
        if not watch.done:
            return {**result, "status": "running", "final_answer": "", "note": f"still running after {timeout_s:g} s: call echs_wait to wait on"}
        data = watch.final.get("data") or {}
        if watch.outcome in TERMINAL_STATUS:
            result["status"] = TERMINAL_STATUS[str(watch.outcome)]
            result["final_answer"] = data.get("final_text") or ""
            if data.get("error"):
                result["error"] = data["error"]
        else:  # input.dropped, thread.killed
            result["status"] = "killed" if watch.outcome == "thread.killed" else "dropped"
            result["final_answer"] = ""
            if data.get("reason"):
                result["reason"] = data["reason"]
        return result

    async def wait(self, thread_ids: Sequence[str], mode: str, timeout_s: float, progress: Progress) -> dict[str, Any]:
        """Until ``any`` or ``all`` of the threads are no longer running (or the timeout)."""
        wanted = list(dict.fromkeys(thread_ids))
        views: dict[str, dict[str, Any]] = {}
        seen: dict[str, int] = {}  # the last seq each thread had when it was read
        async with self.connect() as client:
            for thread_id in wanted:
                thread = await client.get_thread(thread_id)
                views[thread_id], seen[thread_id] = summary(thread), int(thread.get("last_seq") or 0)
            running = [tid for tid in wanted if views[tid]["status"] == "running"]
            settled = trio.Event()

            def done() -> bool:
                finished = [tid for tid in wanted if views[tid]["status"] != "running"]
                return bool(finished) if mode == "any" else len(finished) == len(wanted)

            async def follow(thread_id: str, since: int) -> None:
                async with client.events(thread_id, since=since, reconnect=False) as stream:
                    async for event in stream:
                        line = describe_event(event)
                        if line is not None:
                            await progress(line)
                        if event.get("event") in TURN_ENDS:
                            views[thread_id] = summary(await client.get_thread(thread_id))
                            if views[thread_id]["status"] != "running":
                                if done():
                                    settled.set()
                                return

            timed_out = False
            if running and not done():
                async with trio.open_nursery() as nursery:
                    for thread_id in running:  # from the seq it was read at: no turn end can slip by
                        nursery.start_soon(follow, thread_id, seen[thread_id])
                    nursery.start_soon(_heartbeat, progress, lambda: [tid for tid in wanted if views[tid]["status"] == "running"])
                    with trio.move_on_after(timeout_s) as timer:
                        if not done():
                            await settled.wait()
                    timed_out = timer.cancelled_caught
                    nursery.cancel_scope.cancel()
        return {"threads": [views[tid] for tid in wanted], "timed_out": timed_out}

    async def status(self, thread_id: str | None) -> dict[str, Any]:
        async with self.connect() as client:
            if thread_id is not None:
                return summary(await client.get_thread(thread_id))
            status: dict[str, Any] = await client.status()
            return status

    async def list(self, state: str | None, limit: int) -> list[dict[str, Any]]:
        threads: list[dict[str, Any]] = []
        async with self.connect() as client:
            offset: int | None = 0
            while offset is not None:  # pages, as the daemon cuts them (each under half a frame)
                page = await client.list_threads(offset=offset, limit=1000)
                threads.extend(page["items"])
                offset = page["next_offset"]
        chosen = [summary(thread) for thread in threads if state is None or thread.get("state") == state]
        return sorted(chosen, key=lambda thread: thread["created_at"] or 0, reverse=True)[:limit]

    async def show(self, thread_id: str) -> dict[str, Any]:
        async with self.connect() as client:
            thread: dict[str, Any] = await client.get_thread(thread_id)
        return {**thread, "status": work_status(thread)}

    async def interrupt(self, thread_id: str, clear_queue: bool) -> dict[str, Any]:
        async with self.connect() as client:
            result: dict[str, Any] = await client.interrupt(thread_id, clear_queue=clear_queue or None)
        return result

    async def kill(self, thread_id: str) -> dict[str, Any]:
        async with self.connect() as client:
            result: dict[str, Any] = await client.kill(thread_id)
        return result

    async def blackboard_get(self, key: str) -> dict[str, Any]:
        async with self.connect() as client:
            entry: dict[str, Any] = await client.blackboard_get(key)
        return entry

    async def blackboard_set(self, key: str, value: Any, if_version: int | None) -> dict[str, Any]:
        async with self.connect() as client:
            entry: dict[str, Any] = await client.blackboard_set(key, value, if_version=if_version)
        return entry


async def _follow(stream: Any, watch: TurnWatch, progress: Progress) -> None:
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_heartbeat, progress, lambda: ["the turn"] if not watch.done else [])
        async for event in stream:
            if watch.accept(event):
                line = describe_event(event)
                if line is not None:
                    await progress(line)
            if watch.done:
                break
        nursery.cancel_scope.cancel()


async def _heartbeat(progress: Progress, waiting: Callable[[], list[str]]) -> None:
    """A progress line at least every ``HEARTBEAT_S`` while the wait goes on (clients that
    time calls out reset their clock on progress)."""
    waited = 0.0
    while True:
        await trio.sleep(HEARTBEAT_S)
        waited += HEARTBEAT_S
        left = waiting()
        if left:
            await progress(f"still waiting after {waited:g} s for {', '.join(left)}")
