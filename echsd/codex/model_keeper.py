"""Keeps the catalog's ``endpoint`` layer current: the cached model list at start, a fresh
one right after, and again whenever a thread names a model the catalog has not seen (at
most once per ``min_interval_s``). A failed fetch keeps the last list and says why in the log:
the catalog still works from its other layers.
"""

from __future__ import annotations

import math
from pathlib import Path

import trio

from echsd.codex.client import ResponsesClient
from echsd.codex.errors import ModelError
from echsd.codex.model_list import ModelListing, read_cache, write_cache
from echsd.logs import get_logger

log = get_logger(__name__)

MIN_INTERVAL_S = 60.0  # between two fetches: a burst of unknown names costs one


class ModelListKeeper:
    def __init__(self, client: ResponsesClient, cache_path: Path, *, min_interval_s: float = MIN_INTERVAL_S) -> None:
        self.client = client
        self.catalog = client.catalog
        self.cache_path = cache_path
        self.min_interval_s = min_interval_s
        self.fetches = 0  # attempts so far (tests wait on ``fetched``)
        self.fetched = trio.Event()  # set after each attempt, then replaced
        self._wanted = trio.Event()
        self.serving = trio.Event()  # set once the daemon is ready: the first fetch waits, start-up is not slowed
        self._scope = trio.CancelScope()  # stop() ends run(): no fetch may start on a closed client
        self._ended = trio.Event()  # run() returned (stop() waits for it)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        base_url = self.client.endpoint.base_url
        cached = await trio.to_thread.run_sync(read_cache, self.cache_path, base_url)
        if cached is not None:
            added = self.catalog.set_listing(cached.models)
            log.info("model list from the cache", models=len(cached.models), added=added, fetched_at=cached.fetched_at)
        self.catalog.on_unseen = self._unseen
        task_status.started()
        try:
            await self._keep(base_url)
        finally:
            self._ended.set()

    async def _keep(self, base_url: str) -> None:
        with self._scope:
            await self.serving.wait()
            last = -math.inf
            while True:
                await trio.sleep(max(0.0, last + self.min_interval_s - trio.current_time()))  # the rate limit's timer
                last = trio.current_time()
                self._wanted = trio.Event()
                await self._refresh(base_url)
                await self._wanted.wait()

    async def stop(self) -> None:
        """Ends ``run`` (a fetch under way is cancelled) and waits until it has: called
        before the client closes."""
        self._scope.cancel()
        await self._ended.wait()

    async def wait_fetches(self, count: int) -> None:
        """Until ``count`` fetches were attempted (each one applied, when it succeeded)."""
        while self.fetches < count:
            await self.fetched.wait()

    def _unseen(self, model: str) -> None:
        self._wanted.set()

    async def _refresh(self, base_url: str) -> None:
        try:
            listing: ModelListing | None = await self.client.model_list()
        except ModelError as exc:
            listing = None
            log.warning("cannot fetch the endpoint's model list; the catalog keeps what it had", error=exc.message)
        if listing is not None:
            added = self.catalog.set_listing(listing.models)
            log.info("model list fetched", models=len(listing.models), added=added)
            try:
                await trio.to_thread.run_sync(write_cache, self.cache_path, base_url, listing)
            except OSError as exc:
                log.warning("cannot cache the model list", path=str(self.cache_path), error=str(exc))
        self.fetches += 1
        self.fetched.set()
        self.fetched = trio.Event()
