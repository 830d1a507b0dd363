"""Thread ids as the Codex app-server protocol shows them (sans-IO).

The Codex TUI refuses thread ids that are not UUIDs, so each echsd thread is presented
under a UUID that *encodes* its id: ``thr_`` + 16 hex digits fit in a version-8 UUID
(RFC 9562: vendor-specific layout) with a fixed marker in front::

    thr_0123456789abcdef  <->  ec45d000-0000-8000-8123-456789abcdef
                                               ^    ^ version 8, variant 10

The mapping is a pure function both ways: nothing is stored, every node of a cluster
computes the same UUID, and a UUID resolves without a lookup table. Clients may also
use the ``thr_...`` id itself wherever a thread id is expected.
"""

from __future__ import annotations

import re

from echsd.ids import is_thread_id

_PREFIX = "ec45d000-0000-800"
_UUID = re.compile(r"^ec45d000-0000-800([0-9a-f])-8([0-9a-f]{3})-([0-9a-f]{12})$")


def thread_uuid(thread_id: str) -> str:
    """The UUID the app-server protocol shows for an echsd thread id."""
    if not is_thread_id(thread_id):
        raise ValueError(f"not an echsd thread id: {thread_id!r}")
    digits = thread_id[4:]
    return f"{_PREFIX}{digits[0]}-8{digits[1:4]}-{digits[4:]}"


def thread_id_of(ref: object) -> str | None:
    """The echsd thread id named by ``ref`` (its UUID or the ``thr_`` id), else None."""
    if not isinstance(ref, str):
        return None
    ref = ref.strip().lower()
    if is_thread_id(ref):
        return ref
    found = _UUID.match(ref)
    if found is None:
        return None
    return "thr_" + "".join(found.groups())
