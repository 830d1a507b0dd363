"""``AppContext``: what an app-server connection (and its feeds and history reads) needs of
the daemon."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

import trio

from echsd.appserver.intake import HISTORY_READS
from echsd.appserver.presence import Presence
from echsd.router import ThreadRouter
from echsd.settings import Settings
from echsd.threads.hub import EventHub

Handler = Callable[..., Awaitable[Any] | Any]  # a method: (connection, request) -> result


@dataclass(frozen=True)
class AppContext:
    router: ThreadRouter  # every echsd op goes through it: a thread any node runs is served
    hub: EventHub
    settings: Settings
    methods: dict[str, Handler]
    presence: Presence = field(default_factory=Presence)
    history_reads: trio.CapacityLimiter = field(default_factory=lambda: trio.CapacityLimiter(HISTORY_READS))  # daemon-wide
