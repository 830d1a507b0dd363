"""Transport failures, whichever HTTP path met them (``http`` or ``h1io``): one exception
with a kind, and the one-line reason behind an OS-level error."""

from __future__ import annotations

import socket
from typing import Iterator


class TransportFailure(Exception):
    """``kind``: ``connect`` (unreachable), ``timeout`` (no bytes in time), ``network`` (reset, cut off)."""

    def __init__(self, message: str, *, kind: str) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind


def _os_errors(exc: BaseException | None, depth: int = 0) -> Iterator[OSError]:
    """The OSErrors behind an error (trio reports connect failures as a group)."""
    if exc is None or depth > 8:
        return
    if isinstance(exc, OSError) and exc.errno is not None:
        yield exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _os_errors(inner, depth + 1)
    yield from _os_errors(exc.__cause__ or exc.__context__, depth + 1)


def failure_reason(exc: BaseException) -> str:
    for error in _os_errors(exc):
        if isinstance(error, ConnectionRefusedError):
            return "connection refused"
        if isinstance(error, socket.gaierror):
            return "host not found"
        return error.strerror or str(error)
    return str(exc).strip() or type(exc).__name__
