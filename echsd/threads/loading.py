"""What a node reads to run its threads: at start, and when it adopts another node's."""

from __future__ import annotations

from typing import Any

from echsd.store import queries


def read_threads(conn: Any, epoch: int | None, thread_ids: list[str] | None) -> tuple[list[Any], list[Any], dict[str, int], dict[str, list[str]]]:
    """Rows, pending inputs and last seqs of the threads to run here (leased under ``epoch``
    when given; only ``thread_ids`` when given), and every thread's children (a child may
    be run by another node)."""
    rows = queries.load_threads(conn)
    children: dict[str, list[str]] = {}
    for row in rows:
        if row.parent is not None:
            children.setdefault(row.parent, []).append(row.thread_id)
    keep = queries.leased_threads(conn, epoch) if epoch is not None else None
    if thread_ids is not None:
        keep = set(thread_ids) if keep is None else keep & set(thread_ids)
    if keep is not None:
        rows = [row for row in rows if row.thread_id in keep]
    inputs = [i for i in queries.load_inputs(conn, None) if keep is None or i.thread_id in keep]
    last_seqs = queries.last_seqs(conn) if keep is None or len(keep) > 64 else queries.last_seqs(conn, keep)
    return rows, inputs, last_seqs, children
