"""Thread objects read from the store, for threads another node runs.

This node's own threads are answered from memory (their records); every other thread of a
shared database is read from its stored row, which its owner keeps current, so a client
on any node sees every thread (CONTRACT.md section 5).
"""

from __future__ import annotations

from typing import Any

from echsd.store import Conn, queries
from echsd.threads.activity import waiting_on
from echsd.threads.core import ThreadCore


def stored_objects(conn: Conn, skip: set[str], only: str | None = None) -> list[dict[str, Any]]:
    """The thread objects of the stored threads not in ``skip`` (just ``only``, if given),
    oldest first."""
    rows = queries.load_threads(conn)
    children: dict[str, list[str]] = {}
    for row in rows:
        if row.parent is not None:
            children.setdefault(row.parent, []).append(row.thread_id)
    wanted = [row for row in rows if row.thread_id not in skip and (only is None or row.thread_id == only)]
    if not wanted:
        return []
    ids = {row.thread_id for row in wanted}
    pending: dict[str, int] = {}
    for input_row in queries.load_inputs(conn, only):
        if input_row.thread_id in ids:
            pending[input_row.thread_id] = pending.get(input_row.thread_id, 0) + 1
    owners = queries.owners(conn)
    last_seqs = queries.last_seqs(conn, ids) if len(ids) <= 64 else queries.last_seqs(conn)
    objects = []
    for row in wanted:
        core = ThreadCore.from_row(row, pending_inputs=pending.get(row.thread_id, 0), children=children.get(row.thread_id, ()))
        data = core.snapshot()
        data["last_seq"] = last_seqs.get(row.thread_id, 0)
        data["node"] = owners.get(row.thread_id) or ""
        data["waiting_on"] = waiting_on(core, None, last_event_at=None, given_up=None)  # `thread.why` asks its node
        objects.append(data)
    return objects


def stored_core(conn: Conn, thread_id: str) -> ThreadCore | None:
    """A core rebuilt from the thread's stored row (read only: how it stands, for a node that
    does not run it), or None when there is no such thread."""
    row = queries.get_thread(conn, thread_id)
    return None if row is None else ThreadCore.from_row(row)
