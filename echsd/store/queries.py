"""Read queries: plain functions of a connection, run through ``Store.read``.

They run inside the read transaction ``Store.read`` opens, so one call sees one snapshot,
on either backend (the SQL follows the rules in ``echsd.store.conn``). Nothing here loads
a thread's history or event log unless asked for that thread: startup loads thread
metadata only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from echsd.events import Event
from echsd.store.conn import Conn
from echsd.store.rows import (
    EVENT_COLUMNS,
    INPUT_COLUMNS,
    THREAD_COLUMNS,
    BlackboardRow,
    Gap,
    InputRow,
    ThreadRow,
    event_from_row,
    input_from_row,
    loads,
    thread_from_row,
)

PENDING_STATUSES = ("queued", "steering")


# -- threads and history ------------------------------------------------------------------


def load_threads(conn: Conn) -> list[ThreadRow]:
    """Every thread's metadata, oldest first."""
    rows = conn.execute(f"SELECT {THREAD_COLUMNS} FROM threads ORDER BY created_at, thread_id")
    return [thread_from_row(r) for r in rows]


def get_thread(conn: Conn, thread_id: str) -> ThreadRow | None:
    row = conn.execute(
        f"SELECT {THREAD_COLUMNS} FROM threads WHERE thread_id = ?", (thread_id,)
    ).fetchone()
    return thread_from_row(row) if row else None


def load_items(conn: Conn, thread_id: str) -> list[dict[str, Any]]:
    """The thread's Responses history in order."""
    rows = conn.execute("SELECT item FROM items WHERE thread_id = ? ORDER BY pos", (thread_id,))
    return [loads(r[0]) for r in rows]


def count_items(conn: Conn, thread_id: str) -> int:
    """Number of history items, which is also the next position to append at."""
    row = conn.execute("SELECT count(*) FROM items WHERE thread_id = ?", (thread_id,)).fetchone()
    return int(row[0])


# -- inputs -----------------------------------------------------------------------------


def load_inputs(
    conn: Conn,
    thread_id: str | None = None,
    statuses: Sequence[str] | None = PENDING_STATUSES,
) -> list[InputRow]:
    """Inputs with one of ``statuses`` (all when None), in queue order (``position``).

    Without ``thread_id``: every thread's, grouped by thread, each in queue order.
    """
    where: list[str] = []
    args: list[Any] = []
    if thread_id is not None:
        where.append("thread_id = ?")
        args.append(thread_id)
    if statuses is not None:
        where.append(f"status IN ({', '.join('?' * len(statuses))})")
        args.extend(statuses)
    clause = f"WHERE {' AND '.join(where)}" if where else ""
    rows = conn.execute(
        f"SELECT {INPUT_COLUMNS} FROM inputs {clause} ORDER BY thread_id, position, created_at",
        args,
    )
    return [input_from_row(r) for r in rows]


def load_for_recovery(conn: Conn, thread_id: str) -> tuple[list[dict[str, Any]], list[InputRow], ThreadRow | None]:
    """What a worker starts from: the history, the inputs still waiting, the stored row."""
    return load_items(conn, thread_id), load_inputs(conn, thread_id, statuses=("queued", "steering")), get_thread(conn, thread_id)


def find_input(conn: Conn, thread_id: str, client_msg_id: str) -> InputRow | None:
    """The input a client already sent with ``client_msg_id`` (deduplication)."""
    row = conn.execute(
        f"SELECT {INPUT_COLUMNS} FROM inputs WHERE thread_id = ? AND client_msg_id = ?",
        (thread_id, client_msg_id),
    ).fetchone()
    return input_from_row(row) if row else None


def get_input(conn: Conn, input_id: str) -> InputRow | None:
    row = conn.execute(
        f"SELECT {INPUT_COLUMNS} FROM inputs WHERE input_id = ?", (input_id,)
    ).fetchone()
    return input_from_row(row) if row else None


# -- the event log ------------------------------------------------------------------------


def last_seq(conn: Conn, thread_id: str) -> int:
    """The highest seq ever given out on the thread (events or folded gaps); 0 if none."""
    row = conn.execute(
        "SELECT (SELECT max(seq) FROM events WHERE thread_id = ?),"
        " (SELECT max(to_seq) FROM event_gaps WHERE thread_id = ?)",
        (thread_id, thread_id),
    ).fetchone()
    return max(row[0] or 0, row[1] or 0)


_LAST_SEQS_ALL = (
    "SELECT thread_id,"
    " (SELECT max(seq) FROM events WHERE events.thread_id = threads.thread_id),"
    " (SELECT max(to_seq) FROM event_gaps WHERE event_gaps.thread_id = threads.thread_id) "
    "FROM threads"
)


def last_seqs(conn: Conn, thread_ids: Iterable[str] | None = None) -> dict[str, int]:
    """``last_seq`` of many threads (default: every thread row) for startup.

    One indexed max() lookup per thread (a GROUP BY over the log would read all of it);
    for every thread they run inside one statement, so one round trip on PostgreSQL.
    """
    if thread_ids is None:
        return {tid: max(seq or 0, gap or 0) for tid, seq, gap in conn.execute(_LAST_SEQS_ALL)}
    return {tid: last_seq(conn, tid) for tid in thread_ids}


def count_events(conn: Conn, thread_id: str) -> int:
    """Stored events of the thread (folded ones not counted)."""
    return conn.execute("SELECT count(*) FROM events WHERE thread_id = ?", (thread_id,)).fetchone()[
        0
    ]


EventRow = tuple[str, int, str, float, bytes]
"""(thread_id, seq, type, ts, data as stored JSON bytes): an event not yet decoded."""


def read_event_rows(
    conn: Conn, thread_id: str, after_seq: int = 0, limit: int | None = None
) -> list[EventRow | Gap]:
    """Like ``read_events`` but undecoded: for callers that re-encode anyway (replay)."""
    bounded, args = _limit(limit, (thread_id, after_seq))
    rows = conn.execute(
        f"SELECT {EVENT_COLUMNS} FROM events WHERE thread_id = ? AND seq > ? ORDER BY seq{bounded}",
        args,
    ).fetchall()
    gaps = conn.execute(
        "SELECT from_seq, to_seq, reason FROM event_gaps WHERE thread_id = ? AND to_seq > ? "
        f"ORDER BY from_seq{bounded}",
        args,
    ).fetchall()
    if not gaps:
        return rows  # type: ignore[no-any-return]
    merged: list[EventRow | Gap] = []
    pending = [
        Gap(thread_id, max(start, after_seq + 1), end, reason) for start, end, reason in gaps
    ]
    g = 0
    for row in rows:
        while g < len(pending) and pending[g].from_seq < row[1]:
            merged.append(pending[g])
            g += 1
        merged.append(row)
    merged.extend(pending[g:])
    return merged if limit is None else merged[: max(limit, 0)]


def _limit(limit: int | None, args: tuple[Any, ...]) -> tuple[str, tuple[Any, ...]]:
    """A LIMIT clause and its bindings; none at all for "no limit" (the engines spell
    that differently: SQLite -1, PostgreSQL ALL)."""
    if limit is None:
        return "", args
    return " LIMIT ?", (*args, max(limit, 0))


def read_events(
    conn: Conn, thread_id: str, after_seq: int = 0, limit: int | None = None
) -> list[Event | Gap]:
    """Events with ``seq > after_seq`` in seq order, a ``Gap`` where a range was folded.

    A gap that starts at or before ``after_seq`` is clipped to begin at ``after_seq + 1``.
    A gap counts toward ``limit`` like an event.
    """
    return [
        entry if isinstance(entry, Gap) else event_from_row(entry)
        for entry in read_event_rows(conn, thread_id, after_seq, limit)
    ]


def read_events_all(
    conn: Conn, after_seq: int = 0, limit: int | None = None
) -> list[Event | Gap]:
    """Every thread's events with ``seq > after_seq``, ordered by (ts, thread_id, seq).

    Gaps sort at the time of the last event they replace. No index on ts (it would tax
    every append), so this reads the whole log: for admin/replay use, not hot paths.
    """
    bounded, args = _limit(limit, (after_seq, after_seq, after_seq + 1, after_seq))
    rows = conn.execute(
        "SELECT ts, thread_id, seq, type, data, NULL FROM events WHERE seq > ? "
        "UNION ALL "
        "SELECT ts, thread_id, CASE WHEN from_seq > ? THEN from_seq ELSE ? END, reason, NULL, "
        "to_seq FROM event_gaps WHERE to_seq > ? "
        f"ORDER BY 1, 2, 3{bounded}",
        args,
    )
    out: list[Event | Gap] = []
    for ts, tid, seq, kind, data, to_seq in rows:
        if to_seq is None:
            out.append(Event(tid, seq, kind, ts, loads(data)))
        else:
            out.append(Gap(tid, seq, to_seq, kind))
    return out


# -- blackboard and meta --------------------------------------------------------------------


def get_blackboard(conn: Conn, key: str) -> BlackboardRow | None:
    row = conn.execute(
        "SELECT key, value, version, writer, updated_at FROM blackboard WHERE key = ?", (key,)
    ).fetchone()
    return _bb(row) if row else None


def list_blackboard(conn: Conn, prefix: str = "") -> list[BlackboardRow]:
    """Entries whose key starts with ``prefix``, in key order (an index range scan)."""
    out: list[BlackboardRow] = []
    rows = conn.execute(
        "SELECT key, value, version, writer, updated_at FROM blackboard WHERE key >= ? "
        "ORDER BY key",
        (prefix,),
    )
    for row in rows:
        if not row[0].startswith(prefix):
            break
        out.append(_bb(row))
    return out


def _bb(row: tuple[Any, ...]) -> BlackboardRow:
    return BlackboardRow(
        key=row[0], value=loads(row[1]), version=row[2], writer=row[3], updated_at=row[4]
    )


def get_meta(conn: Conn, key: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


def integrity_check(conn: Conn) -> str:
    """SQLite's ``PRAGMA integrity_check``: "ok", or the problems found, one per line.

    SQLite only: PostgreSQL checks pages itself (and offers amcheck to operators)."""
    return "\n".join(str(r[0]) for r in conn.execute("PRAGMA integrity_check"))
