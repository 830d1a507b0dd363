"""Tools a connected client provides: the model calls them, the client runs them.

A client registers specs on a thread (``tool.register``); while it stays connected they are
offered to that thread's model. A call goes to that client alone as a ``tool.call`` message
(the direct path, ``Peer.send_direct``) and waits for its ``tool.result`` from the same
client. A call nobody answers in time, or whose client disconnects, gets an output that
says so: the turn goes on. A client that disconnects takes its tools with it.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

import orjson
import trio

from echsd.events import RemoteToolCall
from echsd.errors import BadRequest, NotFound
from echsd.tools.base import ToolContext, ToolResult, ToolSpec
from echsd.tools.capabilities import Peer

MAX_SPECS = 64  # in one tool.register
MAX_THREAD_TOOLS = 128  # remote tools one thread offers, from every client together
MAX_THREAD_TOOL_BYTES = 256 * 1024  # ... and their definitions' size: each model request carries them
MAX_OUTPUT_CHARS = 1_000_000
SPEC_FIELDS = frozenset({"type", "name", "description", "parameters", "strict", "timeout_s"})
TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


@dataclass(eq=False)
class PendingCall:
    call_id: str
    peer: Peer
    done: trio.Event = field(default_factory=trio.Event)
    output: str | None = None
    error: str | None = None


class RemoteCalls:
    """Calls of remote tools waiting for their client's answer, daemon-wide, by call id."""

    def __init__(self) -> None:
        self._pending: dict[str, PendingCall] = {}
        self._watched: set[int] = set()  # peers whose closing fails their pending calls

    async def call(self, peer: Peer, message: dict[str, Any], call_id: str, timeout_s: float) -> PendingCall:
        pending = self._pending[call_id] = PendingCall(call_id, peer)
        try:
            if not peer.send_direct(message):
                pending.error = "the client that provides this tool is gone"
                return pending
            if peer.peer_id not in self._watched:
                self._watched.add(peer.peer_id)
                peer.on_close(lambda: self._gone(peer.peer_id))
            with trio.move_on_after(timeout_s):
                await pending.done.wait()
            if not pending.done.is_set():
                pending.error = f"the client did not answer within {timeout_s:g} s"
            return pending
        finally:
            self._pending.pop(call_id, None)

    def result(self, peer: Peer, call_id: str, output: Any) -> dict[str, Any]:
        pending = self._pending.get(call_id)
        if pending is None or pending.peer.peer_id != peer.peer_id:
            raise NotFound(f"no call {call_id!r} is waiting for this connection's answer (timed out, answered, or another client's)")
        text = output if isinstance(output, str) else str(output)
        pending.output = text[:MAX_OUTPUT_CHARS]
        pending.done.set()
        return {"call_id": call_id, "accepted": True}

    def _gone(self, peer_id: int) -> None:
        self._watched.discard(peer_id)
        for pending in list(self._pending.values()):
            if pending.peer.peer_id == peer_id and not pending.done.is_set():
                pending.error = "the client that provides this tool disconnected before answering"
                pending.done.set()


class RemoteTool:
    def __init__(self, spec: ToolSpec, peer: Peer, calls: RemoteCalls, timeout_s: float | None) -> None:
        self.spec = spec
        self.peer = peer
        self._calls = calls
        self._timeout_s = timeout_s

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        message = {
            "event": RemoteToolCall.type_name,
            "thread_id": ctx.thread_id,
            "seq": None,
            "ts": time.time(),
            "data": {"call_id": ctx.call_id, "turn_id": ctx.turn_id, "name": self.spec.name, "arguments": args},
        }
        timeout_s = min(self._timeout_s or ctx.timeout_s, ctx.timeout_s)
        pending = await self._calls.call(self.peer, message, ctx.call_id, timeout_s)
        if pending.error is not None:
            return ToolResult(f"error: {self.spec.name}: {pending.error}", ok=False)
        return ToolResult(pending.output or "")


def remote_specs(raw: Any) -> list[tuple[ToolSpec, float | None]]:
    """``tool.register`` specs checked: ``{name, description?, parameters?, timeout_s?}``, or
    a function tool as the Responses API takes it (``type: "function"``, ``strict``)."""
    if not isinstance(raw, list) or not raw or len(raw) > MAX_SPECS:
        raise BadRequest(f"specs must be a list of 1 to {MAX_SPECS} tool specs")
    specs, names = [], set()
    for index, item in enumerate(raw, start=1):
        if not isinstance(item, dict):
            raise BadRequest(f"spec {index} must be a map")
        unknown = sorted(set(map(str, item)) - SPEC_FIELDS)
        if unknown:
            raise BadRequest(f"spec {index}: unknown field(s) {', '.join(unknown)}; a spec has {', '.join(sorted(SPEC_FIELDS))}")
        if item.get("type", "function") != "function":
            raise BadRequest(f"spec {index}: type must be \"function\" (the only kind of tool a client can provide)")
        name, description = item.get("name"), item.get("description", "")
        if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
            shown = repr(name)[:80]
            raise BadRequest(f"spec {index}: name must be 1-64 ASCII letters, digits, _ or - (as the Responses API requires), got {shown}")
        if name in names:
            raise BadRequest(f"spec {index}: {name!r} is given twice")
        if not isinstance(description, str) or len(description) > 4000:
            raise BadRequest(f"spec {index}: description must be a string of at most 4000 characters")
        parameters = item.get("parameters", {"type": "object", "properties": {}})
        if not isinstance(parameters, dict) or parameters.get("type") != "object":
            raise BadRequest(f"spec {index}: parameters must be a JSON schema of type object")
        strict = item.get("strict", False)
        if not isinstance(strict, bool):
            raise BadRequest(f"spec {index}: strict must be true or false")
        timeout_s = item.get("timeout_s")
        if timeout_s is not None and (isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or timeout_s <= 0):
            raise BadRequest(f"spec {index}: timeout_s must be a positive number")
        names.add(name)
        specs.append((ToolSpec(name=name, description=description, parameters=parameters, writes=True, strict=strict), timeout_s))
    return specs


def spec_size(spec: ToolSpec) -> int:
    """Bytes the spec adds to every model request."""
    return len(orjson.dumps(spec.to_model()))
