"""``Lease``: this node's lease on its threads, where several daemons share the store.

A node writes its threads under one incarnation, its *epoch*: the store writer's guard
refuses a unit of a thread leased under another (fencing), new threads are leased under it,
the lease keeper renews it. One owner changes it, the cluster node (``granted`` when it
joins, ``revoked`` when the lease is lost); everyone else reads ``epoch``. A daemon alone
(SQLite) holds none: ``epoch`` stays None.
"""

from __future__ import annotations


class Lease:
    __slots__ = ("_epoch",)

    def __init__(self) -> None:
        self._epoch: int | None = None

    @property
    def epoch(self) -> int | None:
        """The incarnation this node writes under; None: none (alone, or lost)."""
        return self._epoch

    def granted(self, epoch: int) -> None:
        self._epoch = epoch

    def revoked(self) -> None:
        """Nothing more is written under the old lease."""
        self._epoch = None
