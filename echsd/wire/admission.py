"""Which connections the daemon takes, from its file-descriptor limit (sans-IO).

Every connection holds a file descriptor, and so does everything else the daemon does: the
database and its WAL, tool processes' ptys and pipes, the model endpoint's sockets, files
the tools read. A flood of connections must never push those into EMFILE, so connections
get a share of ``RLIMIT_NOFILE`` and the rest is kept in reserve (``ConnectionLimits``).

Theory of operation. ``Admission.admit`` is called for every accepted socket, before a
byte is read:

- over ``max_connections`` in total, the newcomer is refused (the IO shell answers HTTP
  503 naming the limit and closes);
- over ``max_unauthenticated`` not-yet-authenticated connections on its transport, the
  *oldest* unauthenticated one of that transport is evicted (closed) and the newcomer is
  taken. A flood of idle connections thus cannot lock out a real client, which says
  ``hello`` within a round trip, and it cannot starve the unix socket (``echs``) by
  flooding TCP: each transport has its own unauthenticated quota.

A connection counts towards the total until it is released (its socket closed), evicted
or not, so the total never exceeds ``max_connections``.
"""

from __future__ import annotations

import resource
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable

MIN_RESERVE = 96  # descriptors kept for the daemon's own work, at least (half the limit when tiny)
MAX_CONNECTIONS = 10_000  # a local daemon has no use for more, whatever the limit
MAX_UNAUTHENTICATED = 256  # per transport: nobody needs more handshakes in flight


@dataclass(frozen=True)
class ConnectionLimits:
    nofile: int  # the soft RLIMIT_NOFILE they were derived from
    reserve: int  # descriptors never used by connections
    max_connections: int  # open connections in total (all transports)
    max_unauthenticated: int  # connections before a successful hello, per transport

    @classmethod
    def from_nofile(cls, nofile: int) -> ConnectionLimits:
        """A quarter of the limit (at least ``MIN_RESERVE``, at most half) stays in reserve;
        connections get the rest, unauthenticated ones an eighth of that per transport."""
        reserve = max(min(MIN_RESERVE, nofile // 2), nofile // 4)
        connections = max(1, min(MAX_CONNECTIONS, nofile - reserve))
        unauthenticated = max(1, min(MAX_UNAUTHENTICATED, connections // 8))
        return cls(nofile, nofile - connections, connections, unauthenticated)

    @classmethod
    def of_process(cls) -> ConnectionLimits:
        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft == resource.RLIM_INFINITY:
            soft = 1 << 20
        return cls.from_nofile(soft)

    def describe(self) -> str:
        return (
            f"{self.max_connections} connections ({self.max_unauthenticated} unauthenticated per transport), "
            f"{self.reserve} of {self.nofile} file descriptors in reserve"
        )


class Ticket:
    """One admitted connection; ``evict`` closes it (set by the IO shell)."""

    __slots__ = ("transport", "authenticated", "evict")

    def __init__(self, transport: str, evict: Callable[[], None]) -> None:
        self.transport = transport
        self.authenticated = False
        self.evict = evict


class Admission:
    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self.open = 0  # admitted and not yet released
        self.refused = 0
        self.evicted = 0
        self._waiting: dict[str, OrderedDict[Ticket, None]] = {}  # transport -> unauthenticated, oldest first

    def admit(self, transport: str, evict: Callable[[], None]) -> Ticket | None:
        """A ticket for a new connection, or None: refuse it (over ``max_connections``)."""
        if self.open >= self.limits.max_connections:
            self.refused += 1
            return None
        waiting = self._waiting.setdefault(transport, OrderedDict())
        if len(waiting) >= self.limits.max_unauthenticated:
            oldest, _ = waiting.popitem(last=False)
            self.evicted += 1
            oldest.evict()
        ticket = Ticket(transport, evict)
        waiting[ticket] = None
        self.open += 1
        return ticket

    def authenticated(self, ticket: Ticket) -> None:
        """The connection said a good ``hello``: it no longer counts as unauthenticated."""
        ticket.authenticated = True
        self._waiting.get(ticket.transport, {}).pop(ticket, None)  # type: ignore[call-overload]

    def release(self, ticket: Ticket) -> None:
        """The connection's socket is closed."""
        self._waiting.get(ticket.transport, {}).pop(ticket, None)  # type: ignore[call-overload]
        self.open -= 1

    def unauthenticated(self, transport: str) -> int:
        return len(self._waiting.get(transport, ()))
