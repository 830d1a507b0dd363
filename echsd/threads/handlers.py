"""Which code answers an op inside a thread, found by the op's class.

Two tables, filled by decorators where the code lives: ``ACTOR`` holds the actor's
handlers (``@handles(Send)`` on a ``ThreadActor`` method: IO around the core, such as
parking a reply or starting a compaction); ``DECISIONS`` holds decisions of the core
(``@decides(Rename)`` on a ``ThreadCore`` method that returns the ``Effects`` of one
change), which the actor runs the one generic way: wait for room, decide, commit, answer
with the thread object. An op needs exactly one of the two (or a node handler in
``echsd.router``); a test checks that every op has one.
"""

from __future__ import annotations

from typing import Any, Callable, TypeVar

from echsd.ops.base import Op

F = TypeVar("F", bound=Callable[..., Any])

ACTOR: dict[type[Op], Callable[..., Any]] = {}
DECISIONS: dict[type[Op], Callable[..., Any]] = {}


def handles(*classes: type[Op]) -> Callable[[F], F]:
    """Register a ``ThreadActor`` method ``(self, op, reply)`` as the handler of these ops."""

    def register(fn: F) -> F:
        for cls in classes:
            _check_free(cls)
            ACTOR[cls] = fn
        return fn

    return register


def decides(*classes: type[Op]) -> Callable[[F], F]:
    """Register a ``ThreadCore`` method ``(self, op) -> Effects`` as the decision of these ops."""

    def register(fn: F) -> F:
        for cls in classes:
            _check_free(cls)
            DECISIONS[cls] = fn
        return fn

    return register


def in_thread(cls: type[Op]) -> bool:
    """Whether ``cls`` is answered inside its thread (by its actor or its core)."""
    return cls in ACTOR or cls in DECISIONS


def _check_free(cls: type[Op]) -> None:
    if cls in ACTOR or cls in DECISIONS:
        raise ValueError(f"{cls.op_name} has a thread handler already")
