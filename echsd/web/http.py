"""The little of HTTP the web door needs, over ASGI (hypercorn serves it on trio).

``HttpRequest`` reads what a handler needs (query, headers, a bounded JSON body);
``respond``/``json_response`` send whole answers with the door's security headers;
``errors_as_json`` turns our errors into statuses a page can show.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Iterable
from urllib.parse import parse_qs

import orjson

from echsd.errors import EchsError
from echsd.web.guard import SECURITY_HEADERS, Request

Send = Callable[[dict[str, Any]], Awaitable[None]]
Receive = Callable[[], Awaitable[dict[str, Any]]]

MAX_BODY_BYTES = 1024 * 1024  # a JSON request body (an input's text, a decision)
STATUS_OF = {
    "bad_request": 400,
    "unauthorized": 401,
    "forbidden": 403,
    "not_found": 404,
    "conflict": 409,
    "invalid_state": 409,
    "too_large": 413,
    "unknown_op": 404,
    "unavailable": 503,
    "timeout": 504,
    "upstream_error": 502,
}


class HttpError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


@dataclass
class HttpRequest:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    receive: Receive
    params: dict[str, str] = field(default_factory=dict)  # from the route's pattern

    @classmethod
    def from_scope(cls, scope: dict[str, Any], receive: Receive) -> HttpRequest:
        headers: dict[str, str] = {}
        for raw_name, raw_value in scope.get("headers") or []:
            name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
            headers[name] = f"{headers[name]}; {value}" if name == "cookie" and name in headers else value
        query = {key: values[-1] for key, values in parse_qs(scope.get("query_string", b"").decode("latin-1")).items()}
        return cls(scope["method"].upper(), scope["path"], query, headers, receive)

    @property
    def guard(self) -> Request:
        return Request(self.method, self.path, self.headers)

    async def body(self, limit: int = MAX_BODY_BYTES) -> bytes:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                raise HttpError(400, "bad_request", "the client went away")
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise HttpError(413, "too_large", f"the request body is over {limit:,} bytes")
            chunks.append(chunk)
            if not message.get("more_body"):
                return b"".join(chunks)

    async def json(self) -> dict[str, Any]:
        """The body as a JSON object (``bad_request`` otherwise)."""
        try:
            value = orjson.loads(await self.body() or b"{}")
        except orjson.JSONDecodeError:
            raise HttpError(400, "bad_request", "the body is not JSON") from None
        if not isinstance(value, dict):
            raise HttpError(400, "bad_request", "the body must be a JSON object")
        return value

    def int_query(self, name: str) -> int | None:
        raw = self.query.get(name)
        if raw is None or raw == "":
            return None
        if not raw.isdigit() or len(raw) > 18:
            raise HttpError(400, "bad_request", f"{name} must be a non-negative integer")
        return int(raw)


def status_of(error: EchsError) -> int:
    return STATUS_OF.get(error.code, 500)


async def respond(send: Send, status: int, body: bytes, content_type: str, headers: Iterable[tuple[str, str]] = ()) -> None:
    raw = [
        (b"content-type", content_type.encode()),
        (b"content-length", str(len(body)).encode()),
        *((name.encode(), value.encode()) for name, value in SECURITY_HEADERS),
        *((name.encode(), value.encode("latin-1")) for name, value in headers),
    ]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


async def json_response(send: Send, value: Any, status: int = 200, headers: Iterable[tuple[str, str]] = ()) -> None:
    await respond(send, status, orjson.dumps(value), "application/json", [("cache-control", "no-store"), *headers])


async def error_response(send: Send, status: int, code: str, message: str) -> None:
    await json_response(send, {"error": {"code": code, "message": message}}, status)
