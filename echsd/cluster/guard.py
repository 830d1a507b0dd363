"""``LeaseGuard``: the store writer's guard where several daemons share PostgreSQL.

Inside every write transaction it (1) checks that each unit was submitted under the lease
this node holds now (one submitted before an outage that cost the lease, still pending when
the node rejoined under a new one, is refused: its thread was reloaded from the store
since), and, under a share lock on the thread rows, that every thread the units write for is
still leased to this node's incarnation, and (2) as the
transaction's last statements, notifies the other nodes which events it appended (thread,
first and last seq) and the live-only events it publishes unstored (``thread.deleted``,
whose log is gone: the others cannot read it back), which PostgreSQL delivers at commit
and only then.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from echsd.cluster.channels import EVENTS, NOTICES, event_notices, notice_payloads
from echsd.cluster.nodes import epochs_of
from echsd.store import Conn, LeaseLost, Unit
from echsd.threads.lease import Lease


class LeaseGuard:
    def __init__(self, node_id: str, lease: Lease, on_lost: Callable[[frozenset[str]], None]) -> None:
        self.node_id = node_id  # names the sender of notices (its own relay skips them)
        self.lease = lease  # read on the writer's thread: None while this node holds no lease
        self._on_lost = on_lost

    def submitted(self, unit: Unit) -> None:
        if unit.fence is not None:
            unit.epoch = self.lease.epoch

    def before(self, conn: Conn, units: Sequence[Unit]) -> None:
        fenced = [(unit.fence, unit.epoch) for unit in units if unit.fence is not None]
        if not fenced:
            return
        epoch = self.lease.epoch
        stale = sorted({thread_id for thread_id, under in fenced if epoch is None or under != epoch})
        if stale:  # decided under a lease this node no longer holds: no news of other nodes
            shown = ", ".join(stale[:3]) + (" ..." if len(stale) > 3 else "")
            raise LeaseLost(f"writes of {shown} were made under a lease this node no longer holds; refused")
        threads = sorted({thread_id for thread_id, _ in fenced})
        lost = frozenset(thread_id for thread_id, held in epochs_of(conn, threads).items() if held != epoch)
        if lost:
            shown = ", ".join(sorted(lost)[:3]) + (" ..." if len(lost) > 3 else "")
            raise LeaseLost(f"the lease of {shown} is held by another node now; write refused", lost)

    def after(self, conn: Conn, units: Sequence[Unit]) -> None:
        ranges: dict[str, list[int]] = {}
        for unit in units:
            for event in unit.events:
                span = ranges.get(event.thread_id)
                if span is None:
                    ranges[event.thread_id] = [event.seq, event.seq]
                else:
                    span[1] = event.seq
        for payload in event_notices(ranges):
            conn.execute("SELECT pg_notify(?, ?)", (EVENTS, payload))
        for payload in notice_payloads(self.node_id, (notice for unit in units for notice in unit.notices)):
            conn.execute("SELECT pg_notify(?, ?)", (NOTICES, payload))

    def lost(self, thread_ids: frozenset[str]) -> None:
        self._on_lost(thread_ids)
