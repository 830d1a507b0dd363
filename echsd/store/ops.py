"""Pure builders of write statements, to put into a ``Unit``.

Each function returns one ``Statement``: ``(sql, bindings)``, or a callable of a ``Conn``
when the write needs several SQL statements. Both forms run on either backend (the SQL
follows the rules in ``echsd.store.conn``). JSON values are encoded here, when the
statement is built, so a later mutation of the caller's dict cannot change what gets written.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from echsd.events import DELTA_EVENTS
from echsd.store.conn import Conn
from echsd.store.errors import StoreConflict
from echsd.store.rows import BlackboardRow, InputRow, ThreadRow, dumps_text
from echsd.store.schema import DELTA_PREDICATE, INDEXED_DELTA_TYPES
from echsd.store.unit import Statement

__all__ = [
    "InputRow",
    "ThreadRow",
    "append_items",
    "copy_events",
    "delete_threads",
    "fold_deltas",
    "insert_input",
    "replace_items",
    "set_meta",
    "set_owner",
    "update_input",
    "upsert_thread",
    "write_blackboard",
]

RETENTION = "retention"

_UPSERT_THREAD = """
INSERT INTO threads(thread_id, parent, created_at, state, config, usage, active_turn, extra,
                    updated_at)
VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT(thread_id) DO UPDATE SET
    parent = excluded.parent, state = excluded.state, config = excluded.config,
    usage = excluded.usage, active_turn = excluded.active_turn, extra = excluded.extra,
    updated_at = excluded.updated_at
"""

_INSERT_ITEM = "INSERT INTO items(thread_id, pos, item, turn_id) VALUES(?, ?, ?, ?)"

_INSERT_INPUT = """
INSERT INTO inputs(input_id, thread_id, client_msg_id, mode, text, attachments, status,
                   position, created_at, turn_id, reason, disposition)
VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""


def upsert_thread(row: ThreadRow) -> Statement:
    """Insert or update the thread row (``created_at`` is kept from the first insert)."""
    return (
        _UPSERT_THREAD,
        (
            row.thread_id,
            row.parent,
            row.created_at,
            row.state,
            dumps_text(row.config),
            dumps_text(row.usage),
            row.active_turn,
            dumps_text(row.extra),
            row.updated_at,
        ),
    )


def set_owner(thread_id: str, node_id: str, epoch: int | None) -> Statement:
    """Name the node that runs the thread and the lease epoch it runs under."""
    return ("UPDATE threads SET owner_node = ?, lease_epoch = ? WHERE thread_id = ?", (node_id, epoch, thread_id))


def append_items(
    thread_id: str, start_pos: int, items: list[dict[str, Any]], turn_id: str | None = None
) -> Statement:
    """Append history items at ``start_pos, start_pos + 1, ...``.

    Plain INSERT: writing a position twice fails the unit instead of silently replacing.
    """
    rows = [(thread_id, start_pos + i, dumps_text(item), turn_id) for i, item in enumerate(items)]
    if len(rows) == 1:
        return (_INSERT_ITEM, rows[0])

    def insert_items(conn: Conn) -> None:
        if rows:
            conn.executemany(_INSERT_ITEM, rows)

    return insert_items


def replace_items(thread_id: str, items: list[dict[str, Any]], turn_ids: list[str | None] | None = None) -> Statement:
    """Compaction (or a pruned or cut history): the history becomes ``items`` at positions
    0..n-1, each with the turn it belongs to (``turn_ids``, parallel; None: no turn)."""
    turns = turn_ids if turn_ids is not None else [None] * len(items)
    rows = [(thread_id, i, dumps_text(item), turn) for i, (item, turn) in enumerate(zip(items, turns, strict=True))]

    def replace(conn: Conn) -> None:
        conn.execute("DELETE FROM items WHERE thread_id = ?", (thread_id,))
        if rows:
            conn.executemany(_INSERT_ITEM, rows)

    return replace


def copy_events(source: str, target: str, through_seq: int) -> Statement:
    """A fork's past: the source's events (and folded gaps) with seqs 2..``through_seq``, at
    the same seqs under ``target`` (whose own ``thread.created`` is seq 1)."""

    def copy(conn: Conn) -> None:
        conn.execute(
            "INSERT INTO events(thread_id, seq, type, ts, data) SELECT ?, seq, type, ts, data FROM events "
            "WHERE thread_id = ? AND seq >= 2 AND seq <= ?",
            (target, source, through_seq),
        )
        conn.execute(
            "INSERT INTO event_gaps(thread_id, from_seq, to_seq, reason, ts) SELECT ?, from_seq, to_seq, reason, ts FROM event_gaps "
            "WHERE thread_id = ? AND from_seq >= 2 AND to_seq <= ?",
            (target, source, through_seq),
        )

    return copy


def delete_threads(thread_ids: list[str]) -> Statement:
    """``thread.delete``: the threads' rows, history, inputs and event logs, gone together."""

    def delete(conn: Conn) -> None:
        for table in ("events", "event_gaps", "items", "inputs", "threads"):
            conn.executemany(f"DELETE FROM {table} WHERE thread_id = ?", [(thread_id,) for thread_id in thread_ids])

    return delete


def insert_input(row: InputRow) -> Statement:
    return (
        _INSERT_INPUT,
        (
            row.input_id,
            row.thread_id,
            row.client_msg_id,
            row.mode,
            row.text,
            dumps_text(row.attachments),
            row.status,
            row.position,
            row.created_at,
            row.turn_id,
            row.reason,
            row.disposition,
        ),
    )


def update_input(
    input_id: str, *, status: str, turn_id: str | None = None, reason: str | None = None
) -> Statement:
    """Move an input to ``status``; ``turn_id``/``reason`` are kept when not given."""
    return (
        "UPDATE inputs SET status = ?, turn_id = coalesce(?, turn_id), "
        "reason = coalesce(?, reason) WHERE input_id = ?",
        (status, turn_id, reason, input_id),
    )


_BB_CREATE = (
    "INSERT INTO blackboard(key, value, version, writer, updated_at, deleted) VALUES(?, ?, ?, ?, ?, ?) "
    "ON CONFLICT(key) DO NOTHING RETURNING version"
)
_BB_UPDATE = (
    "UPDATE blackboard SET value = ?, version = ?, writer = ?, updated_at = ?, deleted = ? "
    "WHERE key = ? AND version = ? RETURNING version"
)
_BB_LOG = (
    "INSERT INTO blackboard_log(seq, key, value, version, writer, updated_at, deleted) "
    "VALUES(?, ?, ?, ?, ?, ?, ?)"
)


def write_blackboard(entry: BlackboardRow, *, seq: int, base_version: int, keep: int) -> Statement:
    """One blackboard change (a set, or a delete when ``entry.deleted``: a tombstone row),
    logged as change ``seq``, the log trimmed to its newest ``keep`` changes.

    Guarded, so the database holds the compare-and-set whoever else writes to it (another
    daemon, later): the row must still be at ``base_version`` (0: no row yet) and ``seq``
    must be above every logged one, else ``StoreConflict`` fails the unit and it changes
    nothing.
    """
    value = dumps_text(entry.value)
    deleted = int(entry.deleted)
    logged = None if entry.deleted else value

    def write(conn: Conn) -> None:
        if base_version == 0:
            row = conn.execute(_BB_CREATE, (entry.key, value, entry.version, entry.writer, entry.updated_at, deleted)).fetchone()
        else:
            row = conn.execute(
                _BB_UPDATE, (value, entry.version, entry.writer, entry.updated_at, deleted, entry.key, base_version)
            ).fetchone()
        if row is None:
            raise StoreConflict(f"blackboard key {entry.key!r} is no longer at version {base_version} in the store")
        (top,) = conn.execute("SELECT coalesce(max(seq), 0) FROM blackboard_log").fetchone()
        if seq <= top:
            raise StoreConflict(f"blackboard change {seq} is taken (the log is at {top})")
        conn.execute(_BB_LOG, (seq, entry.key, logged, entry.version, entry.writer, entry.updated_at, deleted))
        if seq > keep:
            conn.execute("DELETE FROM blackboard_log WHERE seq <= ?", (seq - keep,))

    return write


def set_meta(key: str, value: str) -> Statement:
    return (
        "INSERT INTO meta(key, value) VALUES(?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


def fold_deltas(thread_id: str, keep: int, types: Iterable[str] = DELTA_EVENTS, *, keep_bytes: int | None = None) -> Statement:
    """Retention: keep the newest ``keep`` stored events of ``types`` whose data together
    takes at most ``keep_bytes`` (when given), delete older ones.

    Each maximal run of consecutive deleted seqs is recorded in ``event_gaps`` (reason
    "retention"), merged with retention gaps it touches, so readers can tell a client
    exactly which range is gone. Runs on the writer connection inside the unit's
    transaction, so the deletion and its gap record commit together.
    """
    if keep < 0 or (keep_bytes is not None and keep_bytes < 0):
        raise ValueError("keep and keep_bytes must be >= 0")
    type_list = sorted(set(types))

    def fold(conn: Conn) -> None:
        _fold(conn, thread_id, keep, type_list, keep_bytes)

    return fold


def _fold(conn: Conn, thread_id: str, keep: int, types: list[str], keep_bytes: int | None) -> None:
    if not types:
        return
    if tuple(types) == INDEXED_DELTA_TYPES:
        # The literal term (spelled as in the index) plus, on SQLite, INDEXED BY: without
        # ANALYZE statistics its planner would otherwise walk the primary key, i.e. the
        # whole log. PostgreSQL's planner matches the partial index by the term alone.
        table = "events INDEXED BY events_deltas" if conn.dialect == "sqlite" else "events"
        where, args = f"thread_id = ? AND {DELTA_PREDICATE}", (thread_id,)
    else:
        marks = ", ".join("?" * len(types))
        table = "events"
        where, args = f"thread_id = ? AND type IN ({marks})", (thread_id, *types)
    (count,) = conn.execute(f"SELECT count(*) FROM {table} WHERE {where}", args).fetchone()
    excess = count - keep
    if excess > 0:
        last = conn.execute(f"SELECT seq FROM {table} WHERE {where} ORDER BY seq LIMIT 1 OFFSET ?", (*args, excess - 1)).fetchone()[0]
        _delete_through(conn, table, where, args, thread_id, last)
    if keep_bytes is not None:
        # The newest events fill the budget; the newest one that no longer fits, and every
        # older one, go. Only what the count kept is read.
        over = conn.execute(
            f"SELECT seq FROM (SELECT seq, sum(length(data)) OVER (ORDER BY seq DESC) AS newer FROM {table} WHERE {where}) AS sized"
            " WHERE newer > ? ORDER BY seq DESC LIMIT 1",
            (*args, keep_bytes),
        ).fetchone()
        if over is not None:
            _delete_through(conn, table, where, args, thread_id, over[0])


def _delete_through(conn: Conn, table: str, where: str, args: tuple[Any, ...], thread_id: str, last: int) -> None:
    """Delete the selected events up to ``last`` and record the gaps they leave."""
    victims: list[tuple[int, float]] = conn.execute(f"SELECT seq, ts FROM {table} WHERE {where} AND seq <= ? ORDER BY seq", (*args, last)).fetchall()
    conn.execute(f"DELETE FROM {table} WHERE {where} AND seq <= ?", (*args, last))
    for from_seq, to_seq, ts in _runs(victims):
        _record_gap(conn, thread_id, from_seq, to_seq, ts)


def _runs(seqs: list[tuple[int, float]]) -> list[tuple[int, int, float]]:
    """Maximal runs of consecutive seqs as (from, to, latest ts)."""
    runs: list[tuple[int, int, float]] = []
    for seq, ts in seqs:
        if runs and runs[-1][1] == seq - 1:
            start, _, latest = runs[-1]
            runs[-1] = (start, seq, max(latest, ts))
        else:
            runs.append((seq, seq, ts))
    return runs


def _record_gap(conn: Conn, thread_id: str, start: int, end: int, ts: float) -> None:
    before = conn.execute(
        "SELECT from_seq, ts FROM event_gaps WHERE thread_id = ? AND to_seq = ? AND reason = ?",
        (thread_id, start - 1, RETENTION),
    ).fetchone()
    if before is not None:
        start, ts = before[0], max(ts, before[1])
        conn.execute(
            "DELETE FROM event_gaps WHERE thread_id = ? AND from_seq = ?", (thread_id, start)
        )
    after = conn.execute(
        "SELECT to_seq, ts FROM event_gaps WHERE thread_id = ? AND from_seq = ? AND reason = ?",
        (thread_id, end + 1, RETENTION),
    ).fetchone()
    if after is not None:
        conn.execute(
            "DELETE FROM event_gaps WHERE thread_id = ? AND from_seq = ?", (thread_id, end + 1)
        )
        end, ts = after[0], max(ts, after[1])
    conn.execute(
        "INSERT INTO event_gaps(thread_id, from_seq, to_seq, reason, ts) VALUES(?, ?, ?, ?, ?)",
        (thread_id, start, end, RETENTION, ts),
    )
