"""``WebContext``: what the web door's handlers and streams use of the daemon."""

from __future__ import annotations

from dataclasses import dataclass, field

import trio

from echsd.blackboard.service import BlackboardService
from echsd.metrics import DaemonMetrics
from echsd.settings import Settings
from echsd.store import Store
from echsd.threads.hub import EventHub
from echsd.threads.services import OpRunner
from echsd.web.guard import session_cookie
from echsd.web.sessions import WebSessions
from echsd.wire.outbox import OutboxTally


@dataclass
class WebContext:
    """What the web door's handlers use: the router and the parts the streams read."""

    router: OpRunner
    hub: EventHub
    store: Store
    settings: Settings
    boards: BlackboardService
    tally: OutboxTally
    sessions: WebSessions
    metrics: DaemonMetrics | None
    hosts: frozenset[str]  # the Host values that name this listener
    port: int
    revoked: trio.Event = field(default_factory=trio.Event)  # set (and replaced) when sessions are revoked

    @property
    def cookie(self) -> str:
        return session_cookie(self.port)
