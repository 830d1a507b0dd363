"""Node handlers of the wire's other ops: approvals, remote tools' results, the blackboard."""

from __future__ import annotations

from typing import Any

from echsd.ops.daemon import BoardDelete, BoardGet, BoardList, BoardSet, GetApproval, ListApprovals, RespondApproval, ToolResult
from echsd.router.handlers import answers
from echsd.router.node import LocalNode


@answers(ListApprovals)
async def approvals(node: LocalNode, op: ListApprovals) -> list[dict[str, Any]] | dict[str, Any]:
    """This node's pending approvals (each node holds its own threads'): all of them for the
    whole list (``ListApprovals.merge`` pages every node's), one thread's paged here."""
    if op.thread_id is None:
        return node.supervisor.approvals.pending()
    node.supervisor.record(op.thread_id)  # routed here: this node runs it (not_found otherwise)
    return op.page(node.supervisor.approvals.pending(op.thread_id), node.page_bytes)


@answers(GetApproval)
async def approval(node: LocalNode, op: GetApproval) -> dict[str, Any]:
    """``not_found`` unless the request waits here: the router then asks the other nodes."""
    return node.supervisor.approvals.get(op.request_id)


@answers(RespondApproval)
async def respond(node: LocalNode, op: RespondApproval) -> dict[str, Any]:
    """``not_found`` unless the request waits here: the router then asks the other nodes."""
    return node.supervisor.approvals.respond(op.request_id, op.decision, bool(op.always))


@answers(ToolResult)
async def tool_result(node: LocalNode, op: ToolResult) -> dict[str, Any]:
    return node.supervisor.remote_calls.result(op.peer, op.call_id, op.output)


@answers(BoardGet)
async def board_get(node: LocalNode, op: BoardGet) -> dict[str, Any]:
    return node.boards.get(op.key)


@answers(BoardSet)
async def board_set(node: LocalNode, op: BoardSet) -> dict[str, Any]:
    return await node.boards.set(op.key, op.value, if_version=op.if_version)


@answers(BoardList)
async def board_list(node: LocalNode, op: BoardList) -> list[dict[str, Any]] | dict[str, Any]:
    return node.boards.list(op.prefix or "", op.offset, op.limit)


@answers(BoardDelete)
async def board_delete(node: LocalNode, op: BoardDelete) -> dict[str, Any]:
    return await node.boards.delete(op.key, if_version=op.if_version)
