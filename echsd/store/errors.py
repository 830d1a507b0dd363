"""Store failures, mapped onto wire error codes.

Callers above the store only ever see ``StoreError`` (or ``StoreClosed``), never an apsw or
psycopg exception, so the wire layer can answer with a stable code and the driver's detail
stays in ``__cause__`` and the log. Which driver errors are transient (worth retrying) is
each backend's call: ``Conn.is_transient``.
"""

from __future__ import annotations

from echsd.errors import Conflict, Internal, Unavailable


class StoreError(Internal):
    """A write, read or open failed; the message says what and where."""


class StoreClosed(StoreError):
    """The store (or its writer) is shut down: retrying later will not help."""

    code = Unavailable.code


class StoreUnavailable(StoreError):
    """The database is out of reach (down, restarting, the network): nothing was read or
    written, and the same request should work once it is back."""

    code = Unavailable.code
    retry_after_s = 2.0


class StoreConflict(StoreError):
    """A guarded write found the database other than its decision assumed (a compare-and-set
    lost to another writer, possibly another daemon sharing the database). The unit changed
    nothing; the caller re-reads and decides again."""

    code = Conflict.code


class LeaseLost(StoreError):
    """The thread's lease belongs to another node now (it was adopted while this node was
    paused or cut off): the write was refused, and this node must stop the thread."""

    code = Unavailable.code

    def __init__(self, message: str, thread_ids: frozenset[str] = frozenset()) -> None:
        super().__init__(message)
        self.thread_ids = thread_ids
