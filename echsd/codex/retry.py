"""Retry timing: exponential backoff with jitter, honouring the upstream's hints.

``Backoff`` is injectable (``ResponsesClient(backoff=...)``): tests pass a fake ``sleep``
to record the delays asked for without waiting, ``echsd probe`` passes short ones.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Awaitable, Callable

import trio

from echsd.codex.errors import ModelError, RateLimited, UpstreamUnavailable
from echsd.codex.events import Retrying
from echsd.logs import get_logger

log = get_logger(__name__)


@dataclass
class Backoff:
    base_s: float = 0.5
    factor: float = 2.0
    max_s: float = 30.0
    jitter: float = 0.25  # +- this fraction of the computed delay
    max_hint_s: float = 300.0  # never wait longer than this for a retry-after hint
    sleep: Callable[[float], Awaitable[None]] = trio.sleep
    rng: random.Random = field(default_factory=random.Random)

    def delay(self, attempt: int, hint: float | None = None) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based).

        An upstream hint (retry-after, "try again in") wins over the computed delay.
        """
        if hint is not None:
            return min(max(hint, 0.0), self.max_hint_s)
        computed = min(self.base_s * self.factor ** (attempt - 1), self.max_s)
        return max(0.0, computed * (1.0 + self.jitter * (2.0 * self.rng.random() - 1.0)))


class RetryBudget:
    """The retries one logical model request may spend, across re-requests.

    The client charges every retryable failure here and gets back the ``Retrying`` event to
    emit before waiting. A caller that re-requests after ``OutputInterrupted`` passes the
    same budget to the next ``stream``, which then emits the ``pending`` retry and waits
    before sending, so every retry of the request is counted and shown the same way.
    """

    def __init__(self, max_retries: int, backoff: Backoff, what: str) -> None:
        self.max_retries = max_retries
        self.backoff = backoff
        self.what = what
        self.failures = 0
        self.pending: Retrying | None = None  # charged, not yet waited for (after OutputInterrupted)

    def charge(self, error: ModelError) -> Retrying:
        """The next retry for ``error``, or raise: ``error`` itself when it is final,
        ``RateLimited`` / ``UpstreamUnavailable`` (with the cause) when retries ran out."""
        if not error.retryable:
            raise error
        self.failures += 1
        if self.failures > self.max_retries:
            raise _exhausted(error, self.what, self.failures) from error
        delay = self.backoff.delay(self.failures, error.retry_after)
        reason = " ".join(error.message.split())
        log.warning(
            "model request failed, retrying",
            target=self.what,
            attempt=self.failures,
            delay_s=round(delay, 3),
            error=error.code,
            detail=reason,
        )
        return Retrying(self.failures, self.max_retries, delay, reason[:300], error.code)

    async def wait(self, retry: Retrying) -> None:
        await self.backoff.sleep(retry.delay_s)


def _exhausted(error: ModelError, what: str, attempts: int) -> ModelError:
    tries = f"{attempts} attempt{'s' if attempts != 1 else ''}"
    if isinstance(error, RateLimited):
        return RateLimited(
            f"rate limited after {tries}: {error.message}", status=error.status, upstream_code=error.upstream_code,
            retryable=False, cause=error,
        )
    return UpstreamUnavailable(
        f"{what} unavailable after {tries}: {error.message}", status=error.status, upstream_code=error.upstream_code,
        retryable=False, cause=error,
    )
