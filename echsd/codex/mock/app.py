"""What the mock upstream answers (no sockets here): routing, auth, recording, faults.

``MockApp.handle`` turns one HTTP request into a ``JsonAnswer`` or a ``StreamAnswer``;
the server module does the HTTP/1.1 work. State kept here: the recorded requests, the
accepted token (it changes when ``/oauth/token`` issues a new one) and how often each
(script, step) fault was served, for ``times``.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

import orjson
import trio

from echsd.codex.mock.render import Renderer
from echsd.codex.mock.script import (
    Fault,
    Script,
    ScriptError,
    Step,
    encode_compaction,
    input_items,
    is_user_message,
    segment_rounds,
    select,
)
from echsd.logs import get_logger

log = get_logger(__name__)

RESPONSES_PATHS = frozenset({"/v1/responses", "/responses"})
COMPACT_PATHS = frozenset({"/v1/responses/compact", "/responses/compact"})


@dataclass
class RecordedRequest:
    """One request the mock received. ``headers`` has lower-case names and no credentials."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON, or None
    auth_scheme: str | None = None  # e.g. "Bearer"
    bearer: str | None = None  # the bearer token itself (in-process only; JSON gets a hash)
    disconnected: trio.Event = field(default_factory=trio.Event)  # the client hung up mid-answer

    def to_json(self) -> dict[str, Any]:
        digest = hashlib.sha256(self.bearer.encode()).hexdigest() if self.bearer else None
        return {
            "method": self.method,
            "path": self.path,
            "headers": self.headers,
            "auth_scheme": self.auth_scheme,
            "bearer_sha256": digest,
            "body": self.body,
            "disconnected": self.disconnected.is_set(),
        }


@dataclass
class JsonAnswer:
    status: int
    body: Any
    headers: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class StreamAnswer:
    step: Step
    fault: Fault | None
    renderer: Renderer
    record: RecordedRequest


def _error_body(message: str, *, kind: str, code: str | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": code, "param": None}}


def fake_jwt(claims: dict[str, Any]) -> str:
    """An unsigned JWT-shaped token (clients read ``exp`` without verifying)."""
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(orjson.dumps(value)).rstrip(b"=").decode()

    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(claims)}.mock"


class MockApp:
    def __init__(self, script: Script | None, require_token: str | None) -> None:
        self.script = script
        self.accepted_token = require_token  # None: no auth check
        self.requests: list[RecordedRequest] = []
        self._fault_counts: dict[tuple[str, int], int] = {}
        self._spent_refresh_tokens: set[str] = set()  # refresh tokens are single-use, as upstream
        self._changed = trio.Event()

    async def wait_requests(self, count: int) -> None:
        """Until at least ``count`` requests were recorded (wrap in ``trio.fail_after``)."""
        while len(self.requests) < count:
            await self._changed.wait()

    def reset(self) -> None:
        self.requests.clear()
        self._fault_counts.clear()

    def handle(self, method: str, target: str, headers: dict[str, str], raw: bytes) -> JsonAnswer | StreamAnswer:
        path = target.split("?", 1)[0]
        if path == "/_mock/requests" and method == "GET":
            return JsonAnswer(200, [r.to_json() for r in self.requests])
        if path == "/_mock/reset" and method == "POST":
            self.reset()
            return JsonAnswer(200, {"ok": True})
        known = RESPONSES_PATHS | COMPACT_PATHS | {"/oauth/token"}
        if path not in known:
            return JsonAnswer(404, _error_body(f"no route for {path}", kind="invalid_request_error", code="not_found"))
        try:
            body = orjson.loads(raw) if raw else None
        except orjson.JSONDecodeError:
            body = None
        record = self._record(method, path, headers, body)
        if method != "POST":
            return JsonAnswer(405, _error_body(f"{method} not allowed on {path}", kind="invalid_request_error", code=None))
        if path == "/oauth/token":
            return self._oauth(body)
        if self.accepted_token is not None and record.bearer != self.accepted_token:
            message = "Incorrect API key provided." if record.bearer else "Missing bearer authentication in header."
            return JsonAnswer(401, _error_body(message, kind="invalid_request_error", code="invalid_api_key"))
        if not isinstance(body, dict):
            return JsonAnswer(400, _error_body("the body is not a JSON object", kind="invalid_request_error", code=None))
        if path in COMPACT_PATHS:
            return self._compact(body)
        return self._respond(body, len(raw), record)

    def _record(self, method: str, path: str, headers: dict[str, str], body: Any) -> RecordedRequest:
        shown = dict(headers)
        scheme = token = None
        if "authorization" in shown:
            scheme, _, token = shown["authorization"].partition(" ")
            shown["authorization"] = f"{scheme} [REDACTED]"
        record = RecordedRequest(method, path, shown, body, scheme or None, token or None)
        self.requests.append(record)
        self._changed.set()
        self._changed = trio.Event()
        log.debug("mock upstream request", method=method, path=path)
        return record

    def _respond(self, body: dict[str, Any], size: int, record: RecordedRequest) -> JsonAnswer | StreamAnswer:
        try:
            selection = select(self.script, input_items(body.get("input")))
        except ScriptError as exc:
            return JsonAnswer(400, _error_body(str(exc), kind="invalid_request_error", code="mock_script_error"))
        step, fault = selection.step, selection.step.fault
        if fault is not None and selection.fault_key is not None:
            served = self._fault_counts.get(selection.fault_key, 0)
            if step.times is not None and served >= step.times:
                fault = None
            else:
                self._fault_counts[selection.fault_key] = served + 1
        if fault is not None and fault.kind == "http":
            return _http_fault(fault)
        model = body.get("model")
        model = model if isinstance(model, str) else "mock-model"
        return StreamAnswer(step, fault, Renderer(step, model=model, input_tokens=max(1, size // 4)), record)

    def _compact(self, body: dict[str, Any]) -> JsonAnswer:
        """Like the real endpoint: the user messages kept verbatim plus one opaque compaction item."""
        items = input_items(body.get("input"))
        kept = [item for item in items if is_user_message(item)]
        summary = f"mock compaction of {len(items)} items"
        compaction = {
            "id": "cmp_" + secrets.token_hex(12),
            "type": "compaction",
            "encrypted_content": encode_compaction(segment_rounds(items), summary),
        }
        tokens = max(1, len(orjson.dumps(items)) // 4)
        return JsonAnswer(
            200,
            {
                "id": "resp_" + secrets.token_hex(12),
                "object": "response.compaction",
                "created_at": int(time.time()),
                "output": [*kept, compaction],
                "usage": {
                    "input_tokens": tokens,
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens": 16,
                    "output_tokens_details": {"reasoning_tokens": 0},
                    "total_tokens": tokens + 16,
                },
            },
        )

    def _oauth(self, body: Any) -> JsonAnswer:
        """A fake OAuth token endpoint: a refresh grant gets a new access token, which becomes
        the accepted one; a refresh token works once."""
        if not isinstance(body, dict) or body.get("grant_type") != "refresh_token" or not body.get("refresh_token"):
            return JsonAnswer(400, {"error": "invalid_grant", "error_description": "expected a refresh_token grant"})
        if body["refresh_token"] in self._spent_refresh_tokens:
            return JsonAnswer(401, {"error": {"message": "refresh token already used", "code": "refresh_token_reused"}})
        self._spent_refresh_tokens.add(body["refresh_token"])
        now = int(time.time())
        access = fake_jwt({"exp": now + 3600, "iat": now, "jti": secrets.token_hex(8)})
        id_token = fake_jwt({"exp": now + 3600, "https://api.openai.com/auth": {"chatgpt_account_id": "acct_mock"}})
        if self.accepted_token is not None:
            self.accepted_token = access
        return JsonAnswer(
            200,
            {
                "access_token": access,
                "refresh_token": "mock-refresh-" + secrets.token_hex(8),
                "id_token": id_token,
                "token_type": "Bearer",
                "expires_in": 3600,
            },
        )


def _http_fault(fault: Fault) -> JsonAnswer:
    kinds = {401: ("invalid_request_error", "invalid_api_key"), 429: ("requests", "rate_limit_exceeded")}
    kind, code = kinds.get(fault.status, ("server_error" if fault.status >= 500 else "invalid_request_error", None))
    message = fault.message or f"mock upstream fault: HTTP {fault.status}"
    headers = [("retry-after", fault.retry_after)] if fault.retry_after is not None else []
    return JsonAnswer(fault.status, _error_body(message, kind=kind, code=fault.code or code), headers)
