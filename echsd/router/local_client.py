"""``LocalClient``: the client library's methods (``echsd.wire.requests``), in process.

Each method builds the op from its params (validated as on the wire) and runs it through
the router: the same door as a connected client, without the socket. Tests and programs
that embed the daemon use it (``Daemon.ops``).
"""

from __future__ import annotations

from typing import Any

from echsd.errors import UnknownOp
from echsd.ops import OP_CLASSES
from echsd.ops.base import Where
from echsd.router.router import ThreadRouter
from echsd.wire.requests import RequestHelpers


class LocalClient(RequestHelpers):
    def __init__(self, router: ThreadRouter) -> None:
        self.router = router

    async def request(self, op: str, params: dict[str, Any] | None = None) -> Any:
        cls = OP_CLASSES.get(op)
        if cls is None or not cls.wire or cls.where is Where.CONNECTION:
            raise UnknownOp(f"op {op!r} is not served in process")
        return await self.router.run(cls.from_wire(params or {}))
