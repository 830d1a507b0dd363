"""Thread ids abbreviated to any unique prefix, as git abbreviates object ids (CONTRACT.md 0).

``thr_3bd8``, ``3bd8`` and the full ``thr_3bd80f91bbc4edb3`` name the same thread when no
other id starts with it. A full id is used as given (the daemon answers ``not_found`` for
an unknown one); a prefix is resolved here, against ``thread.list`` read page by page.
An unknown prefix is a failure (exit 1, like an unknown id), an ambiguous one a usage
error (exit 2) naming some of the candidates.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from echsd.cli.echs_runtime import EXIT_FAILED, EXIT_USAGE, Refusal

if TYPE_CHECKING:
    from echsd.wire.client import Client

PREFIX = "thr_"
FULL_ID = re.compile(r"thr_[0-9a-f]{16}\Z")
SHOWN_CANDIDATES = 5


def as_prefix(given: str) -> str:
    """What a thread id must start with: ``thr_`` is implied when left out."""
    text = given.strip().lower()
    return text if text.startswith(PREFIX) else PREFIX + text


def choose(given: str, thread_ids: list[str]) -> str:
    """The one id starting with ``given``'s prefix; ``Refusal`` when none or several do."""
    prefix = as_prefix(given)
    matches = sorted(tid for tid in thread_ids if tid.startswith(prefix))
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise Refusal(f"no thread id starts with {prefix!r} (see `echs ls`)", EXIT_FAILED)
    shown = ", ".join(matches[:SHOWN_CANDIDATES]) + (", ..." if len(matches) > SHOWN_CANDIDATES else "")
    raise Refusal(f"{given!r} is ambiguous: {len(matches)} thread ids start with it ({shown}); give more of it", EXIT_USAGE)


async def resolve_thread(client: Client, given: str) -> str:
    """The full thread id ``given`` names (itself, if it is one)."""
    if FULL_ID.match(given):
        return given
    from echsd.cli.echs_pages import read_all

    threads = await read_all(client.list_threads)
    return choose(given, [str(thread["thread_id"]) for thread in threads])
