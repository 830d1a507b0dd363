"""Thread and approval ids abbreviated to any unique prefix, as git abbreviates object ids
(CONTRACT.md 0).

``thr_3bd8``, ``3bd8`` and the full ``thr_3bd80f91bbc4edb3`` name the same thread when no
other id starts with it; ``apr_9c``, ``9c`` the same pending approval. A full id is used as
given (the daemon answers ``not_found`` for an unknown one); a prefix is resolved here,
against ``thread.list`` (read page by page) or ``approval.list``. An empty id or prefix
(also a bare ``thr_``) is a usage error (exit 2), never "every id"; so is one that is not
UTF-8. An unknown prefix is a failure (exit 1, like an unknown id), an ambiguous one a
usage error (exit 2) naming some of the candidates.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from echsd.cli.echs_runtime import EXIT_FAILED, EXIT_USAGE, Refusal
from echsd.cli.echs_text import utf8_problem

if TYPE_CHECKING:
    from echsd.wire.client import Client

SHOWN_CANDIDATES = 5
FULL_ID = re.compile(r"[a-z]{3}_[0-9a-f]{16}\Z")


@dataclass(frozen=True)
class IdKind:
    """What an id names: its prefix (implied when left out), its words, where to list them."""

    prefix: str
    noun: str
    listing: str

    def is_full(self, text: str) -> bool:
        """Whether ``text`` is a whole id (used as given, without a listing)."""
        return FULL_ID.match(text) is not None and text.startswith(self.prefix)


THREAD = IdKind("thr_", "thread", "`echs ls`")
APPROVAL = IdKind("apr_", "pending approval", "`echs approvals`; one answered, timed out or cancelled is no longer pending")


def id_problem(given: str, kind: IdKind = THREAD) -> str | None:
    """Why ``given`` names no id at all (empty, blank, only the prefix, not UTF-8), or None."""
    problem = utf8_problem(given)
    if problem is not None:
        return problem
    if not as_prefix(given, kind)[len(kind.prefix) :]:
        return f"an empty {kind.noun} id would match every one; give the id or a prefix of it"
    return None


def as_prefix(given: str, kind: IdKind = THREAD) -> str:
    """What an id must start with: the kind's prefix (``thr_``) is implied when left out."""
    text = given.strip().lower()
    return text if text.startswith(kind.prefix) else kind.prefix + text


def refuse_empty(given: str, kind: IdKind = THREAD) -> None:
    """``Refusal`` (a usage error) for an id that names nothing (see ``id_problem``)."""
    problem = id_problem(given, kind)
    if problem is not None:
        raise Refusal(f"{given!r} is not a {kind.noun} id: {problem}", EXIT_USAGE)


def choose(given: str, ids: list[str], kind: IdKind = THREAD) -> str:
    """The one id starting with ``given``'s prefix; ``Refusal`` when none or several do."""
    refuse_empty(given, kind)
    prefix = as_prefix(given, kind)
    matches = sorted(candidate for candidate in ids if candidate.startswith(prefix))
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise Refusal(f"no {kind.noun} id starts with {prefix!r} (see {kind.listing})", EXIT_FAILED)
    shown = ", ".join(matches[:SHOWN_CANDIDATES]) + (", ..." if len(matches) > SHOWN_CANDIDATES else "")
    raise Refusal(f"{given!r} is ambiguous: {len(matches)} {kind.noun} ids start with it ({shown}); give more of it", EXIT_USAGE)


async def resolve_thread(client: Client, given: str) -> str:
    """The full thread id ``given`` names (itself, if it is one)."""
    if THREAD.is_full(given):
        return given
    refuse_empty(given)
    from echsd.cli.echs_pages import read_all

    threads = await read_all(client.list_threads)
    return choose(given, [str(thread["thread_id"]) for thread in threads])


async def resolve_approval(client: Client, given: str) -> str:
    """The full id of the pending approval ``given`` names (itself, if it is one)."""
    if APPROVAL.is_full(given):
        return given
    refuse_empty(given, APPROVAL)
    from echsd.cli.echs_pages import read_all

    pending = await read_all(client.approvals)
    return choose(given, [str(request["request_id"]) for request in pending], APPROVAL)


class IdArgument(click.ParamType):
    """A command-line id or prefix: refused at once (exit 2) when empty or not UTF-8."""

    def __init__(self, kind: IdKind) -> None:
        self.kind = kind
        self.name = f"{kind.noun} id"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value)
        problem = id_problem(text, self.kind)
        if problem is not None:
            self.fail(problem, param, ctx)
        return text


THREAD_ID = IdArgument(THREAD)
APPROVAL_ID = IdArgument(APPROVAL)
