"""Typed failures of the model endpoint.

Every failure the thread runtime can see from ``echsd.codex`` is a ``ModelError`` with a
stable ``code`` (it becomes ``turn.error``'s ``error.code``) and a human ``message``.
``retryable`` tells the client's retry loop whether another attempt could succeed.
``after_output`` is True only on ``OutputInterrupted``: the one failure that arrives after
output was handed to the caller and that the caller is expected to retry itself.
"""

from __future__ import annotations

from typing import Any

from echsd.errors import EchsError


class ModelError(EchsError):
    """Base class; subclasses fix ``code``. Extra context is optional and informational."""

    code = "model_error"
    retryable = False
    after_output = False

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        upstream_code: str | None = None,
        upstream_type: str | None = None,
        param: str | None = None,
        retry_after: float | None = None,
        retryable: bool | None = None,
        cause: BaseException | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status  # HTTP status, when the failure came with one
        self.upstream_code = upstream_code  # the upstream's own error code, e.g. "server_error"
        self.upstream_type = upstream_type  # the upstream's error.type, e.g. "usage_limit_reached"
        self.param = param  # the request field the upstream objected to, e.g. "reasoning.summary"
        self.retry_after = retry_after  # seconds the upstream asked us to wait
        self.cause = cause  # the last underlying failure (retries exhausted)
        if retryable is not None:
            self.retryable = retryable


class ContextWindowExceeded(ModelError):
    code = "context_window_exceeded"


class UsageLimitReached(ModelError):
    """The plan's or the organisation's quota is used up; ``resets_at`` (unix seconds) when known."""

    code = "usage_limit"

    def __init__(
        self,
        message: str,
        *,
        resets_at: float | None = None,
        resets_in_seconds: float | None = None,
        plan_type: str | None = None,
        **context: Any,
    ) -> None:
        super().__init__(message, **context)
        self.resets_at = resets_at
        self.resets_in_seconds = resets_in_seconds
        self.plan_type = plan_type


class AuthFailed(ModelError):
    code = "auth"


class BadModelRequest(ModelError):
    code = "bad_request"


class UpstreamUnavailable(ModelError):
    """Unreachable, 5xx, or a transport failure; after retries it carries the last cause."""

    code = "upstream_unavailable"


class RateLimited(ModelError):
    code = "rate_limited"
    retryable = True


class StreamBroken(ModelError):
    """Malformed event, cut off before ``response.completed``, or idle timeout."""

    code = "stream_broken"


class OutputInterrupted(StreamBroken):
    """The stream broke after output had been handed to the caller (cut off, stalled, or a
    transient failure event). The client cannot replay it, so the caller retries:

    - discard the partial output of this response from what it sends next (it may keep it
      visible, marked interrupted);
    - call ``ResponsesClient.stream`` again with the same ``RetryBudget``: that stream first
      yields ``Retrying(attempt, delay_s, reason)``, waits ``delay_s``, then re-requests.

    ``attempt`` and ``delay_s`` are already charged to the budget; once it is spent the
    client raises the final error (``UpstreamUnavailable`` / ``RateLimited``) instead.
    """

    after_output = True
    retryable = True

    def __init__(self, message: str, *, attempt: int, delay_s: float, cause: ModelError) -> None:
        super().__init__(message, status=cause.status, upstream_code=cause.upstream_code, cause=cause)
        self.attempt = attempt
        self.delay_s = delay_s


class ResponseFailed(ModelError):
    code = "response_failed"


class ResponseIncomplete(ModelError):
    """``response.incomplete``: ``reason`` as given; ``output`` holds the items finished so far."""

    code = "response_incomplete"

    def __init__(self, message: str, *, reason: str | None, output: list[dict] | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.output = output or []
