"""Operations as values: every request the daemon serves is one frozen class (``base.op``).

``WIRE_OPS`` is the wire's op table, in the order ``daemon``, ``threads``, ``mcp``, ``web`` and ``workspace`` define
them (an op added to one of them is on the wire at once); ``OP_CLASSES`` has every op by
name, internal ones too (``internal``). Imports nothing of the daemon.
"""

from echsd.ops import daemon, mcp, threads, web, workspace  # the wire's ops, in this order
from echsd.ops import internal
from echsd.ops.base import OP_CLASSES, Op, Where, from_forward

WIRE_OPS: tuple[type[Op], ...] = tuple(cls for cls in OP_CLASSES.values() if cls.wire)
"""Every wire op, in the order the modules define them (the protocol reference's order)."""

__all__ = ["OP_CLASSES", "WIRE_OPS", "Op", "Where", "daemon", "from_forward", "internal", "mcp", "threads", "web", "workspace"]
