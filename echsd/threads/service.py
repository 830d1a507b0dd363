"""The daemon's operations on threads, as the wire (or any in-process caller) sees them.

One method per thread operation of CONTRACT.md 3.2; parameters arrive type-checked by the
op's schema (``echsd.wire.schema``), and every failure is an ``EchsError`` with a wire code.
Anything that changes a thread goes to its actor through the supervisor.
"""

from __future__ import annotations

import time
from typing import Any

from echsd import __version__
from echsd.errors import BadRequest, NotFound
from echsd.ids import is_thread_id
from echsd.mcp.servers import McpServers
from echsd.paging import page_of
from echsd.settings import Settings
from echsd.store import Gap, queries
from echsd.threads.directory import stored_objects
from echsd.threads.state import ThreadState
from echsd.threads.supervisor import Supervisor
from echsd.tools.capabilities import Peer
from echsd.tools.process import containment_name

MAX_EVENTS_PER_READ = 10_000
EVENTS_PER_STORE_READ = 1000  # a page of thread.events is read in chunks, up to its byte budget
ENVELOPE_BYTES = 128  # an event's envelope around its stored data, at most


class ThreadService:
    def __init__(self, supervisor: Supervisor, settings: Settings, cluster: Any = None, mcp: McpServers | None = None) -> None:
        self.supervisor = supervisor
        self.settings = settings
        self.store = supervisor.store
        self.started = time.monotonic()
        self.cluster = cluster  # ``echsd.cluster.ClusterNode`` where several nodes share the store
        self.mcp = mcp  # the daemon's MCP servers

    @property
    def shared(self) -> bool:
        """Whether other nodes run threads of this store (reads then include theirs)."""
        return self.supervisor.remote is not None

    async def status_all(self) -> dict[str, Any]:
        """``status``, with the nodes sharing the store and their lease health."""
        data = self.status()
        data["node"] = self.supervisor.node_id
        if self.cluster is not None:
            data["nodes"] = await self.cluster.nodes()
            data["threads"]["cluster_total"] = sum(node["threads"] for node in data["nodes"])
        else:
            data["nodes"] = [{"node_id": self.supervisor.node_id, "alive": True, "lease_expires_in_s": None, "threads": len(self.supervisor.records)}]
        return data

    async def find(self, thread_id: str) -> dict[str, Any]:
        """``thread.get`` wherever the thread runs."""
        if not self.shared or thread_id in self.supervisor.records:
            return self.get(thread_id)
        if not is_thread_id(thread_id):
            self.supervisor.record(thread_id)  # the not_found of a malformed id
        found = await self.store.read(lambda conn: stored_objects(conn, set(self.supervisor.records), only=thread_id))
        if not found:
            raise NotFound(f"no thread {thread_id}")
        return found[0]

    async def list_all(self, offset: int | None = None, limit: int | None = None) -> list[dict[str, Any]] | dict[str, Any]:
        """``thread.list`` over every node's threads."""
        if not self.shared:
            return self.list(offset, limit)
        local = set(self.supervisor.records)
        objects = [record.to_object() for record in self.supervisor.records.values()]
        objects += await self.store.read(lambda conn: stored_objects(conn, local))
        objects.sort(key=lambda thread: (thread["created_at"], thread["thread_id"]))
        if offset is None and limit is None:
            return objects
        return page_of(objects, offset, limit, self.page_bytes, lambda thread: thread)

    async def tree_all(self, thread_id: str | None = None) -> list[dict[str, Any]]:
        """``thread.tree`` (over every node's threads)."""
        listed = await self.list_all()
        assert isinstance(listed, list)
        by_id = {thread["thread_id"]: thread for thread in listed}
        if thread_id is not None and thread_id not in by_id:
            raise NotFound(f"no thread {thread_id}")

        def node(tid: str) -> dict[str, Any]:
            thread = by_id[tid]
            return {"thread_id": tid, "state": thread["state"], "children": [node(c) for c in thread["children"] if c in by_id]}

        if thread_id is not None:
            return [node(thread_id)]
        return [node(t["thread_id"]) for t in listed if t["parent"] not in by_id]

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
            "mcp_servers": self.mcp.counts() if self.mcp is not None else {"total": 0, "up": 0, "down": 0, "starting": 0},
        }

    async def create(self, **params: Any) -> dict[str, Any]:
        return await self.supervisor.create_thread(params)

    @property
    def page_bytes(self) -> int:
        """What one page may hold: half the frame limit, leaving room for the envelope."""
        return self.settings.tuning.max_message_bytes // 2

    def list(self, offset: int | None = None, limit: int | None = None) -> list[dict[str, Any]] | dict[str, Any]:
        """Every thread, oldest first; with ``offset``/``limit``, one page (see ``page_of``)."""
        records = sorted(self.supervisor.records.values(), key=lambda r: r.core.created_at)
        if offset is None and limit is None:
            return [record.to_object() for record in records]
        return page_of(records, offset, limit, self.page_bytes, lambda record: record.to_object())

    def get(self, thread_id: str) -> dict[str, Any]:
        return self.supervisor.record(thread_id).to_object()

    async def configure(self, thread_id: str, config: Any) -> dict[str, Any]:
        result: dict[str, Any] = await self.supervisor.call(thread_id, "configure", config=config)
        return result

    async def send(
        self,
        thread_id: str,
        text: str,
        mode: str | None = None,
        client_msg_id: str | None = None,
        steps: int | None = None,
        attachments: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        if not text.strip():
            raise BadRequest("text must not be empty")
        result: dict[str, Any] = await self.supervisor.call(
            thread_id, "send", text=text, mode=mode, client_msg_id=client_msg_id, steps=steps, attachments=attachments or []
        )
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

    async def history(self, thread_id: str, offset: int | None = None, limit: int | None = None) -> list[dict[str, Any]] | dict[str, Any]:
        """The thread's items; with ``offset``/``limit``, one page (see ``page_of``)."""
        items: list[dict[str, Any]] = await self.supervisor.call(thread_id, "history")
        if offset is None and limit is None:
            return items
        return page_of(items, offset, limit, self.page_bytes, lambda item: item)

    async def compact(self, thread_id: str) -> dict[str, Any]:
        result: dict[str, Any] = await self.supervisor.call(thread_id, "compact", timeout_s=300.0)
        return result

    async def delete(self, thread_id: str) -> dict[str, Any]:
        return await self.supervisor.delete(thread_id)

    def approvals(self, thread_id: str | None = None) -> list[dict[str, Any]]:
        if thread_id is not None:
            self.supervisor.record(thread_id)
        return self.supervisor.approvals.pending(thread_id)

    def respond_approval(self, request_id: str, decision: str) -> dict[str, Any]:
        return self.supervisor.approvals.respond(request_id, decision)

    async def approvals_all(self, thread_id: str | None = None) -> list[dict[str, Any]]:
        """``approval.list`` over every node: each node holds its own threads' requests."""
        if self.cluster is None or (thread_id is not None and thread_id in self.supervisor.records):
            return self.approvals(thread_id)
        if thread_id is not None:
            await self.find(thread_id)  # not_found for an unknown thread
        found = self.approvals(thread_id) if thread_id is None else []
        for answer in await self.cluster.ask_others("approvals", {"thread_id": thread_id}):
            found.extend(answer)
        return sorted(found, key=lambda approval: approval.get("requested_at", 0))

    async def respond_approval_any(self, request_id: str, decision: str) -> dict[str, Any]:
        """``approval.respond`` wherever the request waits (its thread's node)."""
        if self.cluster is None or self.supervisor.approvals.holds(request_id):
            return self.respond_approval(request_id, decision)
        answers = await self.cluster.ask_others("respond_approval", {"request_id": request_id, "decision": decision})
        if not answers:
            return self.respond_approval(request_id, decision)  # the not_found, worded as on one node
        answer: dict[str, Any] = answers[0]
        return answer

    async def register_tools(self, thread_id: str, specs: Any, peer: Peer) -> dict[str, Any]:
        result: dict[str, Any] = await self.supervisor.call(thread_id, "register_tools", specs=specs, peer=peer)
        return result

    def tool_result(self, call_id: str, output: Any, peer: Peer) -> dict[str, Any]:
        return self.supervisor.remote_calls.result(peer, call_id, output)

    async def events(self, thread_id: str, since: int = 0, limit: int | None = None) -> list[dict[str, Any]]:
        if self.shared and thread_id not in self.supervisor.records:
            await self.find(thread_id)
        else:
            self.supervisor.record(thread_id)
        if since < 0:
            raise BadRequest("since must be >= 0")
        if limit is not None and limit <= 0:
            raise BadRequest("limit must be positive")
        limit = min(limit or MAX_EVENTS_PER_READ, MAX_EVENTS_PER_READ)
        budget = self.page_bytes
        page: list[dict[str, Any]] = []
        size = 0
        after = since
        while len(page) < limit:
            chunk = min(EVENTS_PER_STORE_READ, limit - len(page))
            rows = await self.store.read(lambda conn, after=after, chunk=chunk: queries.read_event_rows(conn, thread_id, after, chunk))
            for row in rows:
                if isinstance(row, Gap):
                    size += ENVELOPE_BYTES
                    page.append(row.envelope())
                    after = row.to_seq
                    continue
                size += ENVELOPE_BYTES + len(row[4])
                if page and size > budget:
                    return page  # the byte budget: the client reads on from the last seq
                page.append(queries.event_from_row(row).envelope())
                after = row[1]
            if len(rows) < chunk:
                break
        return page

