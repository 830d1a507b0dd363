"""Which node-level code answers an op, found by the op's class (``@answers``).

The thread actor's handlers and the core's decisions are in ``echsd.threads.handlers``;
everything else the router runs on a node (reads from memory or the store, a tree walk made
of per-thread ops, the blackboard) is a function here: ``async (node, op) -> result``, with
``node`` the ``LocalNode`` it runs on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Awaitable, Callable, TypeVar

from echsd.ops.base import Op

if TYPE_CHECKING:
    from echsd.router.node import LocalNode

NodeHandler = Callable[["LocalNode", Any], Awaitable[Any]]
H = TypeVar("H", bound=NodeHandler)

NODE: dict[type[Op], NodeHandler] = {}


def answers(*classes: type[Op]) -> Callable[[H], H]:
    """Register ``async def handler(node, op)`` as the node-level answer to these ops."""

    def register(fn: H) -> H:
        for cls in classes:
            if cls in NODE:
                raise ValueError(f"{cls.op_name} has a node handler already")
            NODE[cls] = fn
        return fn

    return register
