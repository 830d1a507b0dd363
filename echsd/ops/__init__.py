"""Operations as values: every request the daemon serves is one frozen class (``base.op``).

``WIRE_OPS`` is the wire's op table in the protocol reference's order; ``OP_CLASSES`` has
every op by name, internal ones too (``internal``). Imports nothing of the daemon.
"""

from echsd.ops import internal
from echsd.ops.base import OP_CLASSES, Op, Where, from_forward
from echsd.ops.daemon import (
    BoardDelete,
    BoardGet,
    BoardList,
    BoardSet,
    Hello,
    ListApprovals,
    RegisterTools,
    RespondApproval,
    Status,
    Subscribe,
    ToolResult,
    Unsubscribe,
)
from echsd.ops.mcp import McpList, McpRestart
from echsd.ops.threads import (
    Compact,
    Configure,
    Create,
    Delete,
    Events,
    Get,
    History,
    Interrupt,
    Kill,
    ListThreads,
    Pause,
    Resume,
    Send,
    Tree,
)

WIRE_OPS: tuple[type[Op], ...] = (
    Hello,
    Status,
    Create,
    ListThreads,
    Get,
    Configure,
    Send,
    Interrupt,
    Pause,
    Resume,
    Kill,
    History,
    Events,
    Compact,
    Subscribe,
    Unsubscribe,
    BoardGet,
    BoardSet,
    BoardList,
    BoardDelete,
    Tree,
    Delete,
    RegisterTools,
    ToolResult,
    ListApprovals,
    RespondApproval,
    McpList,
    McpRestart,
)

__all__ = ["OP_CLASSES", "WIRE_OPS", "Op", "Where", "from_forward", "internal"]
