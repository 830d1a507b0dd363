"""Errors that cross layer boundaries and map one-to-one onto wire error codes.

Every layer raises these (or subclasses) so that the wire server can answer with a
stable ``code`` without knowing where the failure came from.
"""

from __future__ import annotations


class EchsError(Exception):
    """Base class: ``code`` is the snake_case wire error code."""

    code = "internal"
    retry_after_s: float | None = None  # a hint: the same request may well succeed after this long

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BadRequest(EchsError):
    code = "bad_request"


class Unauthorized(EchsError):
    code = "unauthorized"


class UnknownOp(EchsError):
    code = "unknown_op"


class NotFound(EchsError):
    code = "not_found"


class Conflict(EchsError):
    code = "conflict"


class InvalidState(EchsError):
    code = "invalid_state"


class Internal(EchsError):
    code = "internal"


class Timeout(EchsError):
    code = "timeout"


class Unavailable(EchsError):
    """The daemon is shutting down or a dependency (the store) is gone."""

    code = "unavailable"


class UpstreamError(EchsError):
    """The model endpoint failed a request made on the client's behalf (e.g. compaction)."""

    code = "upstream_error"
