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
    BlackboardChange,
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


def leased_threads(conn: Conn, epoch: int) -> set[str]:
    """The threads whose lease carries ``epoch`` (a node's incarnation)."""
    return {r[0] for r in conn.execute("SELECT thread_id FROM threads WHERE lease_epoch = ?", (epoch,))}


def owner_of(conn: Conn, thread_id: str) -> tuple[str | None, int | None] | None:
    """(owner node, lease epoch) of ``thread_id``; None when there is no such thread."""
    row = conn.execute("SELECT owner_node, lease_epoch FROM threads WHERE thread_id = ?", (thread_id,)).fetchone()
    return None if row is None else (row[0], row[1])


def owners(conn: Conn) -> dict[str, str | None]:
    """Every thread's owner node."""
    return {r[0]: r[1] for r in conn.execute("SELECT thread_id, owner_node FROM threads")}


def load_items(conn: Conn, thread_id: str) -> list[dict[str, Any]]:
    """The thread's Responses history in order."""
    rows = conn.execute("SELECT item FROM items WHERE thread_id = ? ORDER BY pos", (thread_id,))
    return [loads(r[0]) for r in rows]


def load_history(conn: Conn, thread_id: str) -> tuple[list[dict[str, Any]], list[str | None]]:
    """The thread's history in order, and the turn each item belongs to (None: none)."""
    items: list[dict[str, Any]] = []
    turns: list[str | None] = []
    for item, turn_id in conn.execute("SELECT item, turn_id FROM items WHERE thread_id = ? ORDER BY pos", (thread_id,)):
        items.append(loads(item))
        turns.append(turn_id)
    return items, turns


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


def load_for_recovery(
    conn: Conn, thread_id: str
) -> tuple[tuple[list[dict[str, Any]], list[str | None]], list[InputRow], ThreadRow | None]:
    """What a worker starts from: the history (with its items' turns), the inputs still
    waiting, the stored row."""
    return load_history(conn, thread_id), load_inputs(conn, thread_id, statuses=("queued", "steering")), get_thread(conn, thread_id)


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

LAST_EVENTS_SCAN = 20_000  # how far back ``last_events`` looks past streamed deltas


def last_events(conn: Conn, thread_id: str, limit: int, skip: Sequence[str]) -> tuple[list[Event], tuple[int, int, float | None]]:
    """The thread's last ``limit`` events whose type is not in ``skip`` (oldest first), and
    ``(count, data bytes, last ts)`` of the skipped ones after them (what a turn streamed
    since). Looks back at most ``LAST_EVENTS_SCAN`` seqs."""
    top = last_seq(conn, thread_id)
    floor = max(0, top - LAST_EVENTS_SCAN)
    marks = ", ".join("?" for _ in skip) or "''"
    rows = conn.execute(
        f"SELECT {EVENT_COLUMNS} FROM events WHERE thread_id = ? AND seq > ? AND type NOT IN ({marks}) ORDER BY seq DESC LIMIT ?",
        (thread_id, floor, *skip, limit),
    ).fetchall()
    events = [event_from_row(row) for row in reversed(rows)]
    after = events[-1].seq if events else floor
    count, size, last_ts = conn.execute(
        f"SELECT count(*), sum(length(data)), max(ts) FROM events WHERE thread_id = ? AND seq > ? AND type IN ({marks})",
        (thread_id, after, *skip),
    ).fetchone()
    return events, (int(count or 0), int(size or 0), last_ts)


def tail_start(conn: Conn, thread_id: str, before: int, max_events: int, max_bytes: int, turn_start: str) -> int:
    """The seq after which the thread's last events before ``before`` begin: at most
    ``max_events`` of them weighing at most ``max_bytes`` (at least one, however big),
    starting at the earliest ``turn_start`` event among them when there is one (so a
    reader sees whole turns where it can). 0: every event before ``before`` fits.

    Reads at most ``max_events`` rows' seq, type and size, newest first (an indexed range).
    """
    rows = conn.execute(
        "SELECT seq, type, length(data) FROM events WHERE thread_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?",
        (thread_id, before, max(max_events, 1)),
    ).fetchall()
    size, first, turn = 0, None, None
    for seq, kind, length in rows:
        size += int(length)
        if first is not None and size > max_bytes:
            break
        first = seq
        if kind == turn_start:
            turn = seq
    else:
        if len(rows) < max(max_events, 1):
            return 0  # everything before ``before`` fits
    assert first is not None  # the loop broke after at least one row
    return (turn if turn is not None else first) - 1


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


def events_of_types(conn: Conn, thread_id: str, types: Sequence[str], *, newest_first: bool = False) -> Iterable[Event]:
    """The thread's stored events of these types, decoded one at a time as they are read
    (a caller that stops early reads no further)."""
    marks = ", ".join("?" for _ in types)
    order = "DESC" if newest_first else "ASC"
    cursor = conn.execute(f"SELECT {EVENT_COLUMNS} FROM events WHERE thread_id = ? AND type IN ({marks}) ORDER BY seq {order}", (thread_id, *types))
    for row in cursor:
        yield event_from_row(row)


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


_BB_COLUMNS = "key, value, version, writer, updated_at, deleted"


def load_blackboard(conn: Conn) -> list[BlackboardRow]:
    """Every blackboard entry, tombstones included, in key order (for the daemon's start)."""
    return [_bb(row) for row in conn.execute(f"SELECT {_BB_COLUMNS} FROM blackboard ORDER BY key")]


def get_blackboard(conn: Conn, key: str) -> BlackboardRow | None:
    """The entry as the store holds it (a tombstone included), or None."""
    row = conn.execute(f"SELECT {_BB_COLUMNS} FROM blackboard WHERE key = ?", (key,)).fetchone()
    return _bb(row) if row else None


def blackboard_log_bounds(conn: Conn) -> tuple[int, int]:
    """(first, last) seq the blackboard log holds; (0, 0) before the first change."""
    first, last = conn.execute("SELECT coalesce(min(seq), 0), coalesce(max(seq), 0) FROM blackboard_log").fetchone()
    return int(first), int(last)


def read_blackboard_log(conn: Conn, after: int, prefix: str = "", limit: int = 1000) -> tuple[int, list[BlackboardChange]]:
    """(the first seq the log still holds, 0 if none; at most ``limit`` changes with
    ``seq > after`` to keys starting with ``prefix``, in seq order).

    The prefix is a key range (``key >= prefix AND key < its successor``), compared bytewise
    on both engines (``COLLATE "C"`` on PostgreSQL), so no engine's string functions are involved.
    """
    where, args = "seq > ?", [after]
    if prefix:
        where += " AND key >= ?"
        args.append(prefix)
        end = prefix_end(prefix)
        if end is not None:
            where += " AND key < ?"
            args.append(end)
    (first,) = conn.execute("SELECT coalesce(min(seq), 0) FROM blackboard_log").fetchone()
    rows = conn.execute(
        f"SELECT seq, {_BB_COLUMNS} FROM blackboard_log WHERE {where} ORDER BY seq LIMIT ?", (*args, max(limit, 0))
    )
    return int(first), [BlackboardChange(row[0], _bb(row[1:])) for row in rows]


def prefix_end(prefix: str) -> str | None:
    """The least string above every string starting with ``prefix`` (None: there is none),
    in code point order, which is UTF-8 byte order."""
    chars = list(prefix)
    while chars:
        code = ord(chars.pop()) + 1
        if code == 0xD800:  # surrogates cannot be stored: skip to the next encodable character
            code = 0xE000
        if code <= 0x10FFFF:
            return "".join(chars) + chr(code)
    return None


def _bb(row: Sequence[Any]) -> BlackboardRow:
    deleted = bool(row[5])
    return BlackboardRow(
        key=row[0], value=None if deleted else loads(row[1]), version=row[2], writer=row[3], updated_at=row[4], deleted=deleted
    )


def get_meta(conn: Conn, key: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


def integrity_check(conn: Conn) -> str:
    """SQLite's ``PRAGMA integrity_check``: "ok", or the problems found, one per line.

    SQLite only: PostgreSQL checks pages itself (and offers amcheck to operators)."""
    return "\n".join(str(r[0]) for r in conn.execute("PRAGMA integrity_check"))
