"""``Hooks``: taps on this node's committed events that feed the command runner and the
webhook senders (see the package's docstring)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Mapping

import trio

from echsd.events import EVENT_TYPES, Event, EventData
from echsd.hooks.command import CommandRunner
from echsd.hooks.config import HooksConfig
from echsd.hooks.payload import ThreadContext, encode, payload, variables
from echsd.hooks.webhook import Spool, WebhookSender, spool_dir
from echsd.logs import get_logger

log = get_logger(__name__)


class Hooks:
    def __init__(
        self,
        config: HooksConfig,
        *,
        state_dir: Path,
        node: str,
        env: Mapping[str, str] | None = None,
        thread_context: ThreadContext = lambda thread_id: None,
        outcome: Callable[[str, str], None] = lambda kind, outcome: None,
    ) -> None:
        self.config = config
        self.node = node
        self.thread_context = thread_context
        self.command = CommandRunner(config.command, dict(os.environ if env is None else env), outcome) if config.command else None
        self.webhooks = [WebhookSender(hook, Spool(spool_dir(state_dir, hook)), outcome) for hook in config.webhooks]

    def taps(self) -> dict[type[EventData], Callable[[Event], None]]:
        """The event types some hook wants, each to ``offer``."""
        return {EVENT_TYPES[name]: self.offer for name in sorted(self.config.events) if name in EVENT_TYPES}

    def offer(self, event: Event) -> None:
        document = payload(event, self.node, self.thread_context(event.thread_id))
        body = encode(document)
        if self.command is not None:
            self.command.offer(event.type, body, variables(document))
        for sender in self.webhooks:
            sender.offer(event.type, body)

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            if self.command is not None:
                await nursery.start(self.command.run)
            for sender in self.webhooks:
                await nursery.start(sender.run)
            if self.config:
                log.info("hooks ready", command=self.config.command.command if self.config.command else None, webhooks=[hook.shown for hook in self.config.webhooks])
            task_status.started()
