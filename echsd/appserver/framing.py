"""The app-server protocol's framing (sans-IO): JSON-RPC 2.0 without the ``"jsonrpc"`` key.

Every WebSocket text frame holds one JSON object:

- a request ``{"id", "method", "params"?}`` (ids are integers or strings, echoed unchanged);
- a notification ``{"method", "params"?}``;
- a response to one of *our* requests (approvals): ``{"id", "result"}`` or ``{"id", "error"}``.

``decode`` sorts a frame into one of those, or a ``FrameProblem`` that says what is wrong
(with the request id when one could be read, so the error can answer it). The builders
make the outgoing objects; ``encode`` turns one into frame text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

# JSON-RPC error codes, as the Codex app-server uses them.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

RequestId = int | str


class RpcError(Exception):
    """Raised by a method handler: answered as ``{"id", "error": {code, message}}``."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Request:
    id: RequestId
    method: str
    params: dict[str, Any]


@dataclass(frozen=True)
class Notification:
    method: str
    params: Any


@dataclass(frozen=True)
class Response:
    """The client's answer to a request we sent: ``error`` is None on success."""

    id: RequestId
    result: Any
    error: dict[str, Any] | None


@dataclass(frozen=True)
class FrameProblem:
    """A frame that is none of the above; ``id`` is set when the frame named one."""

    message: str
    id: RequestId | None = None
    code: int = INVALID_REQUEST


Incoming = Request | Notification | Response | FrameProblem


def valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def decode(data: str | bytes) -> Incoming:
    try:
        message = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        return FrameProblem(f"the frame is not JSON: {exc}", code=PARSE_ERROR)
    if not isinstance(message, dict):
        return FrameProblem(f"a frame must hold one JSON object, not {type(message).__name__}")
    has_id = "id" in message
    request_id = message.get("id")
    if has_id and not valid_id(request_id):
        return FrameProblem("id must be an integer or a string")
    method = message.get("method")
    if method is not None:
        if not isinstance(method, str) or not method:
            return FrameProblem("method must be a non-empty string", request_id)
        params = message.get("params")
        if not has_id:
            return Notification(method, params)
        if params is None:
            params = {}
        if not isinstance(params, dict):
            return FrameProblem(f"params of {method} must be an object", request_id, INVALID_PARAMS)
        return Request(request_id, method, params)
    if has_id and ("result" in message or "error" in message):
        error = message.get("error")
        if error is not None and not isinstance(error, dict):
            error = {"code": INTERNAL_ERROR, "message": str(error)}
        return Response(request_id, message.get("result"), error)
    return FrameProblem("a frame needs a method (request or notification) or a result/error (response)", request_id)


def result(request_id: RequestId, value: Any) -> dict[str, Any]:
    return {"id": request_id, "result": value}


def error(request_id: RequestId, code: int, message: str) -> dict[str, Any]:
    return {"id": request_id, "error": {"code": code, "message": message}}


def notification(method: str, params: Any) -> dict[str, Any]:
    return {"method": method, "params": params}


def server_request(request_id: RequestId, method: str, params: Any) -> dict[str, Any]:
    return {"id": request_id, "method": method, "params": params}


def encode(message: dict[str, Any]) -> str:
    return orjson.dumps(message).decode()
