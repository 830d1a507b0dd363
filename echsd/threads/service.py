"""The daemon's operations, as the wire server (or any in-process caller) sees them.

One method per operation of CONTRACT.md 3.2 on threads; parameters arrive type-checked
by the caller's schema, and every failure is an ``EchsError`` with a wire error code.
"""

from __future__ import annotations

import time
from typing import Any

from echsd import __version__
from echsd.errors import BadRequest, InvalidState
from echsd.events import Event
from echsd.ids import new_thread_id
from echsd.settings import Settings
from echsd.store import Gap, ops, queries
from echsd.threads.config import new_config
from echsd.threads.eventlog import ThreadLog
from echsd.threads.record import ThreadRecord
from echsd.threads.state import ThreadState
from echsd.threads.supervisor import Supervisor
from echsd.tools.registry import default_tool_names

MAX_EVENTS_PER_READ = 10_000


def gap_envelope(gap: Gap) -> dict[str, Any]:
    """The ``events.gap`` event for a range the log no longer holds (or a client missed)."""
    return {
        "event": "events.gap",
        "thread_id": gap.thread_id,
        "seq": gap.from_seq - 1,
        "ts": time.time(),
        "data": {"from_seq": gap.from_seq, "to_seq": gap.to_seq, "reason": gap.reason},
    }


def envelope(entry: Event | Gap) -> dict[str, Any]:
    return entry.envelope() if isinstance(entry, Event) else gap_envelope(entry)


class ThreadService:
    def __init__(self, supervisor: Supervisor, settings: Settings) -> None:
        self.supervisor = supervisor
        self.settings = settings
        self.store = supervisor.services.store
        self.started = time.monotonic()

    def status(self) -> dict[str, Any]:
        counts = {state.value: 0 for state in ThreadState}
        for record in self.supervisor.records.values():
            counts[record.state.value] += 1
        return {
            "version": __version__,
            "provider": self.settings.provider,
            "model": self.settings.model,
            "base_url": self.settings.base_url,
            "uptime_s": round(time.monotonic() - self.started, 3),
            "threads": {"total": len(self.supervisor.records), **counts},
            "state_dir": str(self.settings.state_dir),
        }

    async def create(self, **params: Any) -> dict[str, Any]:
        supervisor = self.supervisor
        tools = supervisor.services.tools
        parent = params.get("parent")
        if parent is not None:
            parent_record = supervisor.record(parent)
            if parent_record.state is ThreadState.KILLED:
                raise InvalidState(f"parent thread {parent} is killed")
        config = new_config(
            params, default_model=self.settings.model, default_tools=default_tool_names(tools), known_tools=tools
        )
        thread_id = new_thread_id()
        record = ThreadRecord(thread_id=thread_id, parent=parent, created_at=time.time(), state=ThreadState.IDLE, config=config)
        record.log = ThreadLog(thread_id, self.store.writer, 0)
        await record.log.ready()
        supervisor.add(record)
        unit = record.log.emit_one("thread.created", {"thread": record.to_object()}, ops.upsert_thread(record.to_row()))
        await unit.wait()
        return record.to_object()

    def list(self) -> list[dict[str, Any]]:
        records = sorted(self.supervisor.records.values(), key=lambda r: r.created_at)
        return [record.to_object() for record in records]

    def get(self, thread_id: str) -> dict[str, Any]:
        return self.supervisor.record(thread_id).to_object()

    async def configure(self, thread_id: str, config: Any) -> dict[str, Any]:
        result: dict[str, Any] = await self.supervisor.call(thread_id, "configure", config=config)
        return result

    async def send(self, thread_id: str, text: str, mode: str | None = None, client_msg_id: str | None = None) -> dict[str, Any]:
        if not text.strip():
            raise BadRequest("text must not be empty")
        result: dict[str, Any] = await self.supervisor.call(thread_id, "send", text=text, mode=mode, client_msg_id=client_msg_id)
        return result

    async def interrupt(self, thread_id: str, clear_queue: bool = False) -> dict[str, Any]:
        result: dict[str, Any] = await self.supervisor.call(thread_id, "interrupt", clear_queue=clear_queue)
        return result

    async def pause(self, thread_id: str) -> dict[str, Any]:
        result: dict[str, Any] = await self.supervisor.call(thread_id, "pause")
        return result

    async def resume(self, thread_id: str) -> dict[str, Any]:
        result: dict[str, Any] = await self.supervisor.call(thread_id, "resume")
        return result

    async def kill(self, thread_id: str) -> dict[str, Any]:
        return await self.supervisor.kill(thread_id)

    async def history(self, thread_id: str) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = await self.supervisor.call(thread_id, "history")
        return result

    async def compact(self, thread_id: str) -> dict[str, Any]:
        result: dict[str, Any] = await self.supervisor.call(thread_id, "compact", timeout_s=300.0)
        return result

    async def events(self, thread_id: str, since: int = 0, limit: int | None = None) -> list[dict[str, Any]]:
        self.supervisor.record(thread_id)
        if since < 0:
            raise BadRequest("since must be >= 0")
        if limit is not None and limit <= 0:
            raise BadRequest("limit must be positive")
        limit = min(limit or MAX_EVENTS_PER_READ, MAX_EVENTS_PER_READ)
        entries = await self.store.read(lambda conn: queries.read_events(conn, thread_id, since, limit))
        return [envelope(entry) for entry in entries]
