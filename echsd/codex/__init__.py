"""The model endpoint: Responses API requests, SSE parsing, auth, retries, compaction.

Knows nothing of threads. The thread runtime uses::

    client = ResponsesClient(endpoint_from_settings(settings))
    async with client.stream(ResponsesRequest(model=..., instructions=..., input=items)) as events:
        async for event in events:   # TextDelta, ReasoningDelta, ArgumentsDelta, ItemAdded, ItemDone, Completed
            ...

Failures are ``ModelError`` subclasses with a stable ``code``. The scripted mock upstream
(tests, demos, the ``mock`` provider) lives in ``echsd.codex.mock``.
"""

from echsd.codex.auth import ApiKeyAuth, Auth, NoAuth
from echsd.codex.client import ResponsesClient
from echsd.codex.codex_auth import CodexAuth
from echsd.codex.endpoint import Endpoint, endpoint_from_settings
from echsd.codex.errors import (
    AuthFailed,
    BadModelRequest,
    ContextWindowExceeded,
    ModelError,
    RateLimited,
    ResponseFailed,
    ResponseIncomplete,
    StreamBroken,
    UpstreamUnavailable,
    UsageLimitReached,
)
from echsd.codex.events import (
    ArgumentsDelta,
    Completed,
    ItemAdded,
    ItemDone,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    Usage,
)
from echsd.codex.request import ResponsesRequest
from echsd.codex.retry import Backoff

__all__ = [
    "ApiKeyAuth",
    "ArgumentsDelta",
    "Auth",
    "AuthFailed",
    "Backoff",
    "BadModelRequest",
    "CodexAuth",
    "Completed",
    "ContextWindowExceeded",
    "Endpoint",
    "ItemAdded",
    "ItemDone",
    "ModelError",
    "NoAuth",
    "RateLimited",
    "ReasoningDelta",
    "ResponseFailed",
    "ResponseIncomplete",
    "ResponsesClient",
    "ResponsesRequest",
    "StreamBroken",
    "StreamEvent",
    "TextDelta",
    "UpstreamUnavailable",
    "Usage",
    "UsageLimitReached",
    "endpoint_from_settings",
]
