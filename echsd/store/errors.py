"""Store failures, mapped onto wire error codes.

Callers above the store only ever see ``StoreError`` (or ``StoreClosed``), never an apsw
exception, so the wire layer can answer with a stable code and the apsw detail stays in
``__cause__`` and the log.
"""

from __future__ import annotations

import apsw

from echsd.errors import Internal, Unavailable


class StoreError(Internal):
    """A write or open failed; the message says what and where."""


class StoreClosed(StoreError):
    """The store (or its writer) is shut down: retrying later will not help."""

    code = Unavailable.code


# Errors that say "the disk or another process is in the way", not "this unit is wrong":
# they are retried with backoff instead of failing the unit.
TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    apsw.BusyError,
    apsw.LockedError,
    apsw.IOError,
    apsw.FullError,
)


def is_transient(exc: BaseException) -> bool:
    return isinstance(exc, TRANSIENT_ERRORS)
