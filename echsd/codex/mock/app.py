"""What the mock upstream answers (no sockets here): routing, auth, recording, faults.

``MockApp.handle`` turns one HTTP request into a ``JsonAnswer`` or a ``StreamAnswer``;
the server module does the HTTP/1.1 work. State kept here: the recorded requests (a ring
bounded in count and bytes), the accepted token (it changes when ``/oauth/token`` issues a
new one) and how often each (script, step) fault was served, for ``times``. The
inspection routes ``/_mock/requests`` and ``/_mock/reset`` exist only with ``inspect``:
the daemon's built-in mock has none, as any local user could read every prompt there.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any

import orjson
import trio

from echsd.codex.mock.checks import encrypted_refusal, error_body, first_encrypted, refusal
from echsd.codex.mock.listing import API_PATHS, BACKEND_PATH, api_listing, backend_listing, known_models
from echsd.codex.mock.render import Renderer
from echsd.codex.mock.script import Fault, Script, ScriptError, Step
from echsd.codex.mock.selection import encode_compaction, input_items, is_user_message, segment_rounds, select
from echsd.logs import get_logger

log = get_logger(__name__)

RESPONSES_PATHS = frozenset({"/v1/responses", "/responses", "/backend-api/codex/responses"})
COMPACT_PATHS = frozenset({"/v1/responses/compact", "/responses/compact", "/backend-api/codex/responses/compact"})
MAX_RECORDS = 256  # recorded requests kept, newest last
MAX_LISTINGS = 64  # model list requests kept (apart: a daemon asks at start, whatever a test counts)
MAX_RECORD_BYTES = 16 << 20  # and at most this much request body among them
USAGE_LIMIT_TYPES = frozenset({"usage_limit_reached", "usage_not_included"})


@dataclass
class RecordedRequest:
    """One request the mock received. ``headers`` has lower-case names and no credentials."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON, or None
    auth_scheme: str | None = None  # e.g. "Bearer"
    bearer: str | None = None  # the bearer token itself (in-process only; JSON gets a hash)
    size: int = 0  # bytes of the raw body
    disconnected: trio.Event = field(default_factory=trio.Event)  # the client hung up mid-answer
    query: str = ""  # the request target after "?"

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
            "query": self.query,
        }


MAX_STORED_RESPONSES = 256  # responses kept for previous_response_id (store: true), oldest dropped


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


def fake_jwt(claims: dict[str, Any]) -> str:
    """An unsigned JWT-shaped token (clients read ``exp`` without verifying)."""
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(orjson.dumps(value)).rstrip(b"=").decode()

    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(claims)}.mock"


class MockApp:
    def __init__(
        self,
        script: Script | None,
        require_token: str | None,
        *,
        inspect: bool = False,
        max_records: int = MAX_RECORDS,
        max_record_bytes: int = MAX_RECORD_BYTES,
    ) -> None:
        self.script = script
        self.accepted_token = require_token  # None: no auth check
        self.inspect = inspect
        self.requests: deque[RecordedRequest] = deque()
        self.listings: deque[RecordedRequest] = deque(maxlen=MAX_LISTINGS)  # GET .../models, kept apart
        self.models = known_models(script)
        self.received = 0  # requests ever recorded (the ring forgets old ones)
        self._max_records = max_records
        self._max_record_bytes = max_record_bytes
        self._record_bytes = 0
        self._fault_counts: dict[tuple[str, int], int] = {}
        self._stored: OrderedDict[str, tuple[list[Any], Renderer]] = OrderedDict()  # store: true responses
        self._spent_refresh_tokens: set[str] = set()  # refresh tokens are single-use, as upstream
        self._changed = trio.Event()

    async def wait_requests(self, count: int) -> None:
        """Until at least ``count`` requests were received (wrap in ``trio.fail_after``)."""
        while self.received < count:
            await self._changed.wait()

    def reset(self) -> None:
        self.requests.clear()
        self.listings.clear()
        self._record_bytes = 0
        self._fault_counts.clear()
        self._stored.clear()

    def handle(self, method: str, target: str, headers: dict[str, str], raw: bytes) -> JsonAnswer | StreamAnswer:
        path, _, query = target.partition("?")
        if path in API_PATHS or path == BACKEND_PATH:
            return self._listing(method, path, query, headers)
        if self.inspect and path == "/_mock/requests" and method == "GET":
            return JsonAnswer(200, [r.to_json() for r in self.requests])
        if self.inspect and path == "/_mock/reset" and method == "POST":
            self.reset()
            return JsonAnswer(200, {"ok": True})
        known = RESPONSES_PATHS | COMPACT_PATHS | {"/oauth/token"}
        if path not in known:
            return JsonAnswer(404, error_body(f"no route for {path}", code="not_found"))
        try:
            body = orjson.loads(raw) if raw else None
        except orjson.JSONDecodeError:
            body = None
        record = self._record(method, path, headers, body, len(raw))
        if method != "POST":
            return JsonAnswer(405, error_body(f"{method} not allowed on {path}"))
        if path == "/oauth/token":
            return self._oauth(body)
        if self.accepted_token is not None and record.bearer != self.accepted_token:
            message = "Incorrect API key provided." if record.bearer else "Missing bearer authentication in header."
            return JsonAnswer(401, error_body(message, code="invalid_api_key"))
        if not isinstance(body, dict):
            return JsonAnswer(400, error_body("the body is not a JSON object"))
        if path in COMPACT_PATHS:
            return self._compact(body)
        return self._respond(path, body, len(raw), record)

    def _listing(self, method: str, path: str, query: str, headers: dict[str, str]) -> JsonAnswer:
        """``GET /models``: the API's shape, or the ChatGPT backend's (with an ETag)."""
        record = _recorded(method, path, headers, None, 0, query)
        self.listings.append(record)
        if method != "GET":
            return JsonAnswer(405, error_body(f"{method} not allowed on {path}"))
        if self.accepted_token is not None and record.bearer != self.accepted_token:
            message = "Incorrect API key provided." if record.bearer else "Missing bearer authentication in header."
            return JsonAnswer(401, error_body(message, code="invalid_api_key"))
        if path == BACKEND_PATH:
            body, etag = backend_listing(self.models, self.script)
            return JsonAnswer(200, body, [("etag", etag)])
        return JsonAnswer(200, api_listing(self.models))

    def _record(self, method: str, path: str, headers: dict[str, str], body: Any, size: int) -> RecordedRequest:
        record = _recorded(method, path, headers, body, size)
        self.requests.append(record)
        self._record_bytes += size
        while self.requests and (len(self.requests) > self._max_records or self._record_bytes > self._max_record_bytes):
            self._record_bytes -= self.requests.popleft().size
        self.received += 1
        self._changed.set()
        self._changed = trio.Event()
        log.debug("mock upstream request", method=method, path=path)
        return record

    def _respond(self, path: str, body: dict[str, Any], size: int, record: RecordedRequest) -> JsonAnswer | StreamAnswer:
        items = input_items(body.get("input"))
        previous = body.get("previous_response_id")
        if previous is not None:  # the conversation continues a stored response, as on the real API
            stored = self._stored.get(previous) if isinstance(previous, str) else None
            if stored is None:
                message = f"Previous response with id '{previous}' not found."
                return JsonAnswer(400, error_body(message, code="previous_response_not_found", param="previous_response_id"))
            earlier, renderer = stored
            items = [*earlier, *renderer.output, *items]
        try:
            selection = select(self.script, items)
        except ScriptError as exc:
            return JsonAnswer(400, error_body(str(exc), code="mock_script_error"))
        refused = refusal(path, body, items, size, selection.conditions, self.models)
        if refused is not None:
            return JsonAnswer(*refused)
        step, fault = selection.step, selection.step.fault
        if fault is not None and selection.fault_key is not None:
            served = self._fault_counts.get(selection.fault_key, 0)
            if step.times is not None and served >= step.times:
                fault = None
            else:
                self._fault_counts[selection.fault_key] = served + 1
        if fault is not None and fault.kind == "http":
            return _http_fault(fault)
        if fault is not None and fault.kind == "invalid_encrypted_content":
            content = first_encrypted(items)  # refused only where there is reasoning to refuse
            if content is not None:
                return JsonAnswer(*encrypted_refusal(content))
            fault = None
        model = body.get("model")
        model = model if isinstance(model, str) else "mock-model"
        renderer = Renderer(step, model=model, input_tokens=max(1, size // 4))
        if body.get("store") is True:
            self._stored[renderer.response_id] = (items, renderer)
            while len(self._stored) > MAX_STORED_RESPONSES:
                self._stored.popitem(last=False)
        return StreamAnswer(step, fault, renderer, record)

    def _compact(self, body: dict[str, Any]) -> JsonAnswer:
        """Like the real endpoint: the user messages kept verbatim plus one opaque compaction item."""
        items = input_items(body.get("input"))
        try:
            conditions = select(self.script, items).conditions
        except ScriptError:
            conditions = None
        if conditions is not None and not conditions.compact_call:
            message = "Invalid URL (POST /v1/responses/compact)"  # what a Responses endpoint without the call says
            return JsonAnswer(404, {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}})
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
            return JsonAnswer(401, error_body("refresh token already used", code="refresh_token_reused"))
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


def _recorded(method: str, path: str, headers: dict[str, str], body: Any, size: int, query: str = "") -> RecordedRequest:
    """A request as recorded: the authorization header's credential kept apart, never shown."""
    shown = dict(headers)
    scheme = token = None
    if "authorization" in shown:
        scheme, _, token = shown["authorization"].partition(" ")
        shown["authorization"] = f"{scheme} [REDACTED]"
    return RecordedRequest(method, path, shown, body, scheme or None, token or None, size, query=query)


def _http_fault(fault: Fault) -> JsonAnswer:
    headers = [("retry-after", fault.retry_after)] if fault.retry_after is not None else []
    if fault.error_type is not None:  # the ChatGPT backend's shape: "type", no "code"
        usage = fault.error_type in USAGE_LIMIT_TYPES
        message = fault.message or ("The usage limit has been reached" if usage else f"mock upstream fault: {fault.error_type}")
        error: dict[str, Any] = {"type": fault.error_type, "message": message}
        if fault.code is not None:
            error["code"] = fault.code
        if usage:
            resets_in = fault.resets_in_seconds
            error.update(plan_type="plus", resets_at=int(time.time()) + resets_in, resets_in_seconds=resets_in)
        return JsonAnswer(fault.status, {"error": error}, headers)
    kinds = {401: ("invalid_request_error", "invalid_api_key"), 429: ("requests", "rate_limit_exceeded")}
    kind, code = kinds.get(fault.status, ("server_error" if fault.status >= 500 else "invalid_request_error", None))
    message = fault.message or f"mock upstream fault: HTTP {fault.status}"
    return JsonAnswer(fault.status, error_body(message, kind=kind, code=fault.code or code), headers)
