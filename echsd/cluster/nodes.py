"""The node registry and thread leases, as SQL on a PostgreSQL ``Conn``.

Every function runs its own transaction on the connection it is given (the membership's
own connection, never the store writer's: a writer backlog must not cost a node its
lease). Time is the database's clock (``clock_timestamp()``), so nodes whose clocks
disagree still agree on who has expired.

The lease protocol:
- ``register``: a node takes a new incarnation (a sequence number, unique across the
  cluster and never reused) and, with it, every thread its node id owned before (a
  restart) and every thread nobody owns. The incarnation is the fencing epoch of all of
  them: a previous incarnation of the same node is fenced out from that commit on.
- ``renew``: pushes the node's expiry forward; it fails (returns False) once another node
  adopted this incarnation's threads, which is the node's cue to stop them all.
- ``adopt``: a node whose expiry passed is deleted and its threads move to the adopter's
  epoch, in one transaction; two adopters racing find the row once.
- A write of a thread is allowed only while the thread row carries the writer's epoch
  (``epochs_of``, under a share lock, see ``echsd.cluster.guard``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from echsd.store.conn import Conn

NOW = "extract(epoch from clock_timestamp())"


@dataclass(frozen=True, slots=True)
class NodeRow:
    node_id: str
    incarnation: int
    started_at: float
    expires_in_s: float  # negative once expired
    address: str
    threads: int

    def to_object(self) -> dict[str, Any]:
        return {
            "node_id": self.node_id,
            "incarnation": self.incarnation,
            "started_at": self.started_at,
            "lease_expires_in_s": round(self.expires_in_s, 3),
            "alive": self.expires_in_s > 0,
            "address": self.address,
            "threads": self.threads,
        }


def register(conn: Conn, node_id: str, lease_s: float, address: str = "") -> int:
    """Start a new incarnation of ``node_id``; returns it (the epoch of its threads)."""
    with conn.transaction():
        incarnation = int(conn.execute("SELECT nextval('node_incarnations')").fetchone()[0])
        conn.execute(
            "INSERT INTO nodes(node_id, incarnation, started_at, expires_at, address) "
            f"VALUES(?, ?, {NOW}, {NOW} + ?, ?) "
            "ON CONFLICT(node_id) DO UPDATE SET incarnation = excluded.incarnation, "
            "started_at = excluded.started_at, expires_at = excluded.expires_at, address = excluded.address",
            (node_id, incarnation, lease_s, address),
        )
        conn.execute(
            "UPDATE threads SET owner_node = ?, lease_epoch = ? WHERE owner_node = ? OR owner_node IS NULL",
            (node_id, incarnation, node_id),
        )
    return incarnation


def renew(conn: Conn, node_id: str, incarnation: int, lease_s: float) -> bool:
    """Extend the lease; False when this incarnation is no longer registered (adopted)."""
    with conn.transaction():
        row = conn.execute(
            f"UPDATE nodes SET expires_at = {NOW} + ? WHERE node_id = ? AND incarnation = ? RETURNING node_id",
            (lease_s, node_id, incarnation),
        ).fetchone()
    return row is not None


def expired(conn: Conn) -> list[tuple[str, int]]:
    """(node_id, incarnation) of every node whose lease has run out."""
    with conn.transaction():
        rows = conn.execute(f"SELECT node_id, incarnation FROM nodes WHERE expires_at < {NOW} ORDER BY node_id").fetchall()
    return [(r[0], int(r[1])) for r in rows]


def adopt(conn: Conn, dead: tuple[str, int], node_id: str, incarnation: int) -> list[str]:
    """Take over the threads of the expired incarnation ``dead``; [] if another node did.

    Requests still waiting for the dead node are handed to the adopter too."""
    dead_node, dead_incarnation = dead
    with conn.transaction():
        gone = conn.execute(
            f"DELETE FROM nodes WHERE node_id = ? AND incarnation = ? AND expires_at < {NOW} RETURNING node_id",
            (dead_node, dead_incarnation),
        ).fetchone()
        if gone is None:
            return []
        rows = conn.execute(
            "UPDATE threads SET owner_node = ?, lease_epoch = ? WHERE lease_epoch = ? RETURNING thread_id",
            (node_id, incarnation, dead_incarnation),
        ).fetchall()
        conn.execute("UPDATE requests SET target = ? WHERE target = ? AND answer IS NULL", (node_id, dead_node))
    return [r[0] for r in rows]


def nodes(conn: Conn) -> list[NodeRow]:
    """Every registered node with the threads it runs (for ``status``)."""
    rows = conn.execute(
        f"SELECT n.node_id, n.incarnation, n.started_at, n.expires_at - {NOW}, n.address, "
        "(SELECT count(*) FROM threads t WHERE t.lease_epoch = n.incarnation) "
        "FROM nodes n ORDER BY n.node_id"
    ).fetchall()
    return [NodeRow(r[0], int(r[1]), float(r[2]), float(r[3]), r[4], int(r[5])) for r in rows]


def owner_of(conn: Conn, thread_id: str) -> str | None:
    """The node that runs ``thread_id`` (None: no such thread)."""
    row = conn.execute("SELECT owner_node FROM threads WHERE thread_id = ?", (thread_id,)).fetchone()
    return None if row is None else (row[0] or "")


def owned(conn: Conn, incarnation: int, thread_ids: list[str] | None = None) -> list[str]:
    """The threads leased to ``incarnation`` (of ``thread_ids`` when given)."""
    if thread_ids is None:
        rows = conn.execute("SELECT thread_id FROM threads WHERE lease_epoch = ?", (incarnation,)).fetchall()
    else:
        rows = conn.execute(
            "SELECT thread_id FROM threads WHERE lease_epoch = ? AND thread_id = ANY(?)", (incarnation, thread_ids)
        ).fetchall()
    return [r[0] for r in rows]


def epochs_of(conn: Conn, thread_ids: list[str]) -> dict[str, int | None]:
    """The lease epoch of each existing thread of ``thread_ids``, share-locked until the
    end of the transaction (so no adoption can commit between this check and the write)."""
    rows = conn.execute(
        "SELECT thread_id, lease_epoch FROM threads WHERE thread_id = ANY(?) FOR SHARE", (thread_ids,)
    ).fetchall()
    return {r[0]: (None if r[1] is None else int(r[1])) for r in rows}
