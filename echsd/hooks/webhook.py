"""``[[hooks.webhook]]``: each event's JSON posted to a URL, at least once.

Each webhook has a sender task that posts its deliveries one after another, in order. A
delivery is first written to the webhook's spool directory (off the event loop), then
posted until the receiver answers 2xx; a refusal that retrying cannot mend (another 4xx)
or ``MAX_ATTEMPTS`` failures end it, logged. Between attempts it waits with exponential
backoff (a ``Retry-After`` wins, up to ``MAX_DELAY_S``). A delivery leaves the spool once
it ended, so those a stop (or a crash) interrupted are posted again when the daemon starts:
a receiver may see one twice and drops repeats by ``X-Echsd-Delivery`` (the JSON's ``id``).

Each request carries ``X-Echsd-Event``, ``X-Echsd-Delivery``, ``X-Echsd-Attempt`` and,
with a ``secret``, ``X-Echsd-Signature-256: sha256=<hex>``: the HMAC-SHA256 of the body
under the secret (as GitHub signs its webhooks).
"""

from __future__ import annotations

import hashlib
import hmac
import math
import random
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import orjson
import trio

from echsd import __version__
from echsd.hooks.config import Webhook
from echsd.logs import get_logger

if TYPE_CHECKING:
    import httpx

log = get_logger(__name__)

MAX_ATTEMPTS = 10
BASE_DELAY_S = 1.0
MAX_DELAY_S = 60.0
MAX_PENDING = 1000  # deliveries waiting per webhook (in memory; the spool holds them too)
MAX_PENDING_BYTES = 16 * 1024 * 1024
RETRYABLE = frozenset({408, 425, 429})
Outcome = Callable[[str, str], None]


def signature(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def backoff(attempt: int, retry_after: float | None = None, rng: random.Random | None = None) -> float:
    """Seconds before attempt ``attempt + 1``: doubling from ``BASE_DELAY_S`` with jitter,
    or the receiver's ``Retry-After``; at most ``MAX_DELAY_S``."""
    if retry_after is not None:
        return min(max(retry_after, 0.0), MAX_DELAY_S)
    delay = BASE_DELAY_S * 2 ** (attempt - 1)
    return min(MAX_DELAY_S, delay * (0.8 + 0.4 * (rng or random).random()))


class Spool:
    """A webhook's deliveries not yet done, one file each, named in arrival order."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._next = 0

    def load(self) -> list[tuple[Path, bytes]]:
        """What an earlier run left (oldest first); runs in a worker thread."""
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        found = sorted(self.directory.glob("*.json"))
        if found:
            self._next = int(found[-1].stem) + 1
        return [(path, path.read_bytes()) for path in found]

    def add(self, body: bytes) -> Path:
        """Write a delivery (worker thread); its path."""
        path = self.directory / f"{self._next:016d}.json"
        self._next += 1
        temporary = path.with_suffix(".tmp")
        temporary.write_bytes(body)
        temporary.replace(path)
        return path

    @staticmethod
    def done(path: Path) -> None:
        path.unlink(missing_ok=True)


class WebhookSender:
    def __init__(self, hook: Webhook, spool: Spool, outcome: Outcome) -> None:
        self.hook = hook
        self.spool = spool
        self._outcome = outcome
        self._send, self._receive = trio.open_memory_channel[tuple[Path | None, bytes]](math.inf)
        self._pending = 0
        self._pending_bytes = 0
        self.delivered = 0

    def offer(self, event_type: str, body: bytes) -> None:
        """Queue a delivery (never blocks: called as events are published)."""
        if event_type not in self.hook.events:
            return
        if self._pending >= MAX_PENDING or self._pending_bytes + len(body) > MAX_PENDING_BYTES:
            log.warning("webhook backlog full; an event is not delivered", url=self.hook.shown, event_type=event_type, pending=self._pending)
            self._outcome("webhook", "dropped")
            return
        self._queue(None, body)

    def _queue(self, path: Path | None, body: bytes) -> None:
        self._pending += 1
        self._pending_bytes += len(body)
        self._send.send_nowait((path, body))

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        import httpx

        for path, body in await trio.to_thread.run_sync(self.spool.load):
            self._queue(path, body)  # an earlier run's, first
        task_status.started()
        async with httpx.AsyncClient(timeout=self.hook.timeout_s, follow_redirects=False) as client:
            async for path, body in self._receive:
                try:
                    if path is None:
                        path = await self._spooled(body)
                    await self._deliver(client, body)
                    if path is not None:
                        await trio.to_thread.run_sync(self.spool.done, path)
                except Exception:  # our bug: this delivery stays in the spool for the next start
                    log.exception("webhook sender failed", url=self.hook.shown)
                finally:
                    self._pending -= 1
                    self._pending_bytes -= len(body)

    async def _spooled(self, body: bytes) -> Path | None:
        try:
            return await trio.to_thread.run_sync(self.spool.add, body)
        except OSError as exc:
            log.warning("cannot spool a webhook delivery; it is posted without a copy on disk", url=self.hook.shown, error=str(exc))
            return None

    async def _deliver(self, client: httpx.AsyncClient, body: bytes) -> None:
        import httpx

        headers = self._headers(body)
        for attempt in range(1, MAX_ATTEMPTS + 1):
            headers["X-Echsd-Attempt"] = str(attempt)
            retry_after: float | None = None
            try:
                response = await client.post(self.hook.url, content=body, headers=headers)
            except httpx.HTTPError as exc:
                problem = f"{type(exc).__name__}: {exc}"
            else:
                if 200 <= response.status_code < 300:
                    self.delivered += 1
                    self._outcome("webhook", "ok")
                    return
                problem = f"HTTP {response.status_code}"
                if response.status_code < 500 and response.status_code not in RETRYABLE:
                    log.error("webhook refused a delivery; not retried", url=self.hook.shown, delivery=headers["X-Echsd-Delivery"], status=response.status_code)
                    self._outcome("webhook", "failed")
                    return
                retry_after = _retry_after(response.headers.get("retry-after"))
            if attempt == MAX_ATTEMPTS:
                break
            delay = backoff(attempt, retry_after)
            log.warning("webhook delivery failed; retrying", url=self.hook.shown, delivery=headers["X-Echsd-Delivery"], attempt=attempt, delay_s=round(delay, 2), problem=problem)
            self._outcome("webhook", "retry")
            await trio.sleep(delay)
        log.error("webhook delivery given up", url=self.hook.shown, delivery=headers["X-Echsd-Delivery"], attempts=MAX_ATTEMPTS)
        self._outcome("webhook", "failed")

    def _headers(self, body: bytes) -> dict[str, str]:
        try:
            document = orjson.loads(body)
        except orjson.JSONDecodeError:
            document = {}
        headers = {
            "Content-Type": "application/json",
            "User-Agent": f"echsd/{__version__}",
            "X-Echsd-Event": str(document.get("event", "")),
            "X-Echsd-Delivery": str(document.get("id", "")),
        }
        if self.hook.secret:
            headers["X-Echsd-Signature-256"] = signature(self.hook.secret, body)
        return headers


def _retry_after(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        return None  # an HTTP date: the backoff decides


def spool_dir(state_dir: Path, hook: Webhook) -> Path:
    """A webhook's spool: named after its URL, so a changed config leaves the old one be."""
    return state_dir / "hooks" / ("webhook-" + hashlib.sha256(hook.url.encode()).hexdigest()[:16])
