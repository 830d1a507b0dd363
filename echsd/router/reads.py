"""Node handlers that read: status, threads, trees, events, a sub-agent's standing.

A node answers its own threads from memory and every other node's from the store, whose
rows their owners keep current, so a client on any node sees every thread (CONTRACT.md 5).
"""

from __future__ import annotations

import time
from typing import Any

from echsd import __version__
from echsd.errors import BadRequest, NotFound
from echsd.ids import is_thread_id
from echsd.ops.daemon import Status
from echsd.ops.internal import AgentView
from echsd.events import DELTA_EVENTS
from echsd.ops.threads import MAX_WHY_EVENTS, WHY_EVENTS, Events, Get, ListThreads, Tree, Why
from echsd.paging import page_of
from echsd.router.handlers import answers
from echsd.router.node import LocalNode
from echsd.store import Gap, queries
from echsd.store.errors import StoreUnavailable
from echsd.threads.agents import agent_view
from echsd.threads.directory import stored_core, stored_objects
from echsd.threads.state import ThreadState
from echsd.tools.process import containment_name, sandbox_runtime

MAX_EVENTS_PER_READ = 10_000
EVENTS_PER_STORE_READ = 1000  # a page of thread.events is read in chunks, up to its byte budget
ENVELOPE_BYTES = 128  # an event's envelope around its stored data, at most


@answers(Status)
async def status(node: LocalNode, op: Status) -> dict[str, Any]:
    """``status``: this node's counts, and the nodes sharing the store with their lease health."""
    supervisor, settings = node.supervisor, node.settings
    counts = {state.value: 0 for state in ThreadState}
    usage: dict[str, float] = {}
    for record in supervisor.records.values():
        counts[record.core.state.value] += 1
        for key, value in record.core.usage.items():
            usage[key] = usage.get(key, 0) + value
    data: dict[str, Any] = {
        "version": __version__,
        "provider": settings.provider,
        "model": settings.model,
        "base_url": settings.base_url,
        "uptime_s": round(time.monotonic() - node.started, 3),
        "threads": {"total": len(supervisor.records), **counts},
        "usage": usage,
        "rate_limits": supervisor.limits.snapshot(),
        "containment": containment_name(),
        "sandbox": sandbox_runtime().status(),
        "state_dir": str(settings.state_dir),
        "mcp_servers": node.mcp.counts() if node.mcp is not None else {"total": 0, "up": 0, "down": 0, "starting": 0},
        "node": node.node_id,
    }
    if node.remote is not None:
        try:
            data["nodes"] = await node.remote.nodes()
        except StoreUnavailable as exc:  # this node still answers, and says why it knows no more
            data["store"] = {"reachable": False, "error": exc.message}
            data["nodes"] = [{"node_id": node.node_id, "alive": None, "lease_expires_in_s": None, "threads": len(supervisor.records)}]
        else:
            data["store"] = {"reachable": True, "error": None}
        data["threads"]["cluster_total"] = sum(each["threads"] for each in data["nodes"])
    else:
        data["nodes"] = [{"node_id": node.node_id, "alive": True, "lease_expires_in_s": None, "threads": len(supervisor.records)}]
    return data


@answers(Get)
async def get(node: LocalNode, op: Get) -> dict[str, Any]:
    """One thread, wherever it runs."""
    record = node.supervisor.local(op.thread_id)
    if record is not None or not node.shared or not is_thread_id(op.thread_id):
        return node.supervisor.record(op.thread_id).to_object()
    here = set(node.supervisor.records)
    found = await node.store.read(lambda conn: stored_objects(conn, here, only=op.thread_id))
    if not found:
        raise NotFound(f"no thread {op.thread_id}")
    return found[0]


async def every_thread(node: LocalNode) -> list[dict[str, Any]]:
    """Every node's threads, oldest first."""
    records = sorted(node.supervisor.records.values(), key=lambda record: record.core.created_at)
    objects = [record.to_object() for record in records]
    if node.shared:
        here = set(node.supervisor.records)
        objects += await node.store.read(lambda conn: stored_objects(conn, here))
        objects.sort(key=lambda thread: (thread["created_at"], thread["thread_id"]))
    return objects


@answers(ListThreads)
async def list_threads(node: LocalNode, op: ListThreads) -> list[dict[str, Any]] | dict[str, Any]:
    """Every thread, oldest first; with ``offset``/``limit``, one page (see ``page_of``)."""
    objects = await every_thread(node)
    if op.offset is None and op.limit is None:
        return objects
    return page_of(objects, op.offset, op.limit, node.page_bytes, lambda thread: thread)


@answers(Tree)
async def tree(node: LocalNode, op: Tree) -> list[dict[str, Any]]:
    """``thread.tree``, built from every node's thread objects."""
    listed = await every_thread(node)
    by_id = {thread["thread_id"]: thread for thread in listed}
    if op.thread_id is not None and op.thread_id not in by_id:
        raise NotFound(f"no thread {op.thread_id}")

    def subtree(thread_id: str) -> dict[str, Any]:
        thread = by_id[thread_id]
        return {"thread_id": thread_id, "state": thread["state"], "children": [subtree(c) for c in thread["children"] if c in by_id]}

    if op.thread_id is not None:
        return [subtree(op.thread_id)]
    return [subtree(t["thread_id"]) for t in listed if t["parent"] not in by_id]


@answers(AgentView)
async def view(node: LocalNode, op: AgentView) -> dict[str, Any]:
    record = node.supervisor.local(op.thread_id)
    if record is not None or not node.shared or not is_thread_id(op.thread_id):
        return agent_view(node.supervisor.record(op.thread_id).core)
    core = await node.store.read(lambda conn: stored_core(conn, op.thread_id))
    if core is None:
        raise NotFound(f"no thread {op.thread_id}")
    return agent_view(core)


@answers(Events)
async def events(node: LocalNode, op: Events) -> list[dict[str, Any]]:
    """A page of the stored log, at most ``limit`` events and half a frame."""
    await get(node, Get(thread_id=op.thread_id))  # not_found for an unknown thread
    since = op.since or 0
    limit = min(op.limit or MAX_EVENTS_PER_READ, MAX_EVENTS_PER_READ)
    if since < 0:
        raise BadRequest("since must be >= 0")
    thread_id, budget = op.thread_id, node.page_bytes
    page: list[dict[str, Any]] = []
    size = 0
    after = since
    while len(page) < limit:
        chunk = min(EVENTS_PER_STORE_READ, limit - len(page))
        rows = await node.store.read(lambda conn, after=after, chunk=chunk: queries.read_event_rows(conn, thread_id, after, chunk))
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


@answers(Why)
async def why(node: LocalNode, op: Why) -> dict[str, Any]:
    """``thread.why``, on the node that runs the thread (its ``waiting_on`` is in memory there)."""
    thread = node.supervisor.record(op.thread_id).to_object()
    limit = min(op.limit or WHY_EVENTS, MAX_WHY_EVENTS)
    skip = sorted(DELTA_EVENTS)
    events, (count, size, last_ts) = await node.store.read(lambda conn: queries.last_events(conn, op.thread_id, limit, skip))
    thread["last_events"] = [event.envelope() for event in events]
    thread["streamed"] = {"events": count, "bytes": size, "last_ts": last_ts}
    return thread
