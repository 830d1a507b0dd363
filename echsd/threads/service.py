"""The daemon's operations on threads, as the wire (or any in-process caller) sees them.

One method per thread operation of CONTRACT.md 3.2; parameters arrive type-checked by the
op's schema (``echsd.wire.schema``), and every failure is an ``EchsError`` with a wire code.
Anything that changes a thread goes to its actor through the supervisor.
"""

from __future__ import annotations

import time
from typing import Any

from echsd import __version__
from echsd.errors import BadRequest
from echsd.settings import Settings
from echsd.store import queries
from echsd.threads.state import ThreadState
from echsd.threads.supervisor import Supervisor
from echsd.tools.capabilities import Peer
from echsd.tools.process import containment_name

MAX_EVENTS_PER_READ = 10_000


class ThreadService:
    def __init__(self, supervisor: Supervisor, settings: Settings) -> None:
        self.supervisor = supervisor
        self.settings = settings
        self.store = supervisor.store
        self.started = time.monotonic()

    def status(self) -> dict[str, Any]:
        counts = {state.value: 0 for state in ThreadState}
        usage: dict[str, float] = {}
        for record in self.supervisor.records.values():
            counts[record.core.state.value] += 1
            for key, value in record.core.usage.items():
                usage[key] = usage.get(key, 0) + value
        return {
            "version": __version__,
            "provider": self.settings.provider,
            "model": self.settings.model,
            "base_url": self.settings.base_url,
            "uptime_s": round(time.monotonic() - self.started, 3),
            "threads": {"total": len(self.supervisor.records), **counts},
            "usage": usage,
            "rate_limits": self.supervisor.limits.snapshot(),
            "containment": containment_name(),
            "state_dir": str(self.settings.state_dir),
        }

    async def create(self, **params: Any) -> dict[str, Any]:
        return await self.supervisor.create_thread(params)

    def list(self) -> list[dict[str, Any]]:
        records = sorted(self.supervisor.records.values(), key=lambda r: r.core.created_at)
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

    def approvals(self, thread_id: str | None = None) -> list[dict[str, Any]]:
        if thread_id is not None:
            self.supervisor.record(thread_id)
        return self.supervisor.approvals.pending(thread_id)

    def respond_approval(self, request_id: str, decision: str) -> dict[str, Any]:
        return self.supervisor.approvals.respond(request_id, decision)

    async def register_tools(self, thread_id: str, specs: Any, peer: Peer) -> dict[str, Any]:
        result: dict[str, Any] = await self.supervisor.call(thread_id, "register_tools", specs=specs, peer=peer)
        return result

    def tool_result(self, call_id: str, output: Any, peer: Peer) -> dict[str, Any]:
        return self.supervisor.remote_calls.result(peer, call_id, output)

    async def events(self, thread_id: str, since: int = 0, limit: int | None = None) -> list[dict[str, Any]]:
        self.supervisor.record(thread_id)
        if since < 0:
            raise BadRequest("since must be >= 0")
        if limit is not None and limit <= 0:
            raise BadRequest("limit must be positive")
        limit = min(limit or MAX_EVENTS_PER_READ, MAX_EVENTS_PER_READ)
        entries = await self.store.read(lambda conn: queries.read_events(conn, thread_id, since, limit))
        return [entry.envelope() for entry in entries]
