"""Typed failures of the model endpoint.

Every failure the thread runtime can see from ``echsd.codex`` is a ``ModelError`` with a
stable ``code`` (it becomes ``turn.error``'s ``error.code``) and a human ``message``.
``retryable`` tells the client's retry loop whether another attempt could succeed; it is
only consulted while nothing has been handed to the caller yet.
"""

from __future__ import annotations

from echsd.errors import EchsError


class ModelError(EchsError):
    """Base class; subclasses fix ``code``. Extra context is optional and informational."""

    code = "model_error"
    retryable = False

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        upstream_code: str | None = None,
        retry_after: float | None = None,
        retryable: bool | None = None,
        cause: BaseException | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status  # HTTP status, when the failure came with one
        self.upstream_code = upstream_code  # the upstream's own error code, e.g. "server_error"
        self.retry_after = retry_after  # seconds the upstream asked us to wait
        self.cause = cause  # the last underlying failure (retries exhausted)
        if retryable is not None:
            self.retryable = retryable


class ContextWindowExceeded(ModelError):
    code = "context_window_exceeded"


class UsageLimitReached(ModelError):
    code = "usage_limit"


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


class ResponseFailed(ModelError):
    code = "response_failed"


class ResponseIncomplete(ModelError):
    """``response.incomplete``: ``reason`` as given; ``output`` holds the items finished so far."""

    code = "response_incomplete"

    def __init__(self, message: str, *, reason: str | None, output: list[dict] | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.output = output or []
