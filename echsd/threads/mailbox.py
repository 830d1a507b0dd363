"""Requests to a thread actor and their replies.

Callers never touch actor state: they put a ``Request`` in the actor's mailbox and wait on
its ``Reply`` with a timeout. A reply may be given later than the request is handled
(interrupt answers once the turn has ended), so a reply is a small one-shot future.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import trio

from echsd.errors import EchsError, Internal, Timeout
from echsd.ops.base import Op

DEFAULT_TIMEOUT_S = 30.0  # as ``echsd.ops.base``


class Reply:
    def __init__(self) -> None:
        self._done = trio.Event()
        self._value: Any = None
        self._error: BaseException | None = None

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def set(self, value: Any) -> None:
        if not self._done.is_set():
            self._value = value
            self._done.set()

    def fail(self, error: BaseException) -> None:
        if not self._done.is_set():
            self._error = error
            self._done.set()

    async def wait(self, timeout_s: float = DEFAULT_TIMEOUT_S) -> Any:
        with trio.move_on_after(timeout_s):
            await self._done.wait()
        if not self._done.is_set():
            raise Timeout(f"the thread did not answer within {timeout_s:g} s")
        if self._error is not None:
            raise self._error
        return self._value


@dataclass
class Request:
    op: Op  # the actor answers it by its class (``echsd.threads.handlers``)
    reply: Reply = field(default_factory=Reply)


def first_leaf(exc: BaseException) -> BaseException:
    """The first real exception inside (nested) exception groups: what to report."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def error_reply(reply: Reply, exc: BaseException) -> None:
    """Answer with a wire-mappable error; unexpected ones become ``internal``."""
    exc = first_leaf(exc)
    if isinstance(exc, EchsError):
        reply.fail(exc)
    else:
        reply.fail(Internal(f"{type(exc).__name__}: {exc}"))
