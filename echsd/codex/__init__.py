"""The model endpoint: Responses API requests, SSE parsing, auth, retries, compaction.

Knows nothing of threads. The thread runtime uses::

    client = ResponsesClient(settings.endpoint(), catalog=settings.catalog)
    budget = client.retry_budget()
    async with client.stream(ResponsesRequest(model=..., instructions=..., input=items,
                                              session_id=thread_id), budget=budget) as events:
        async for event in events:   # output: TextDelta, ReasoningDelta, ArgumentsDelta,
            ...                      #   ItemAdded, ItemDone, Completed; notices: Retrying,
                                     #   RateLimitsUpdated, SummaryUnavailable, ReasoningDropped

Failures are ``ModelError`` subclasses with a stable ``code``; ``OutputInterrupted`` asks
the caller to re-request with the same budget. The model catalog (``ModelCatalog``)
validates efforts and prices usage. The scripted mock upstream (tests, demos, the ``mock``
provider) lives in ``echsd.codex.mock``.
"""

from echsd.codex.auth import ApiKeyAuth, Auth, NoAuth
from echsd.codex.catalog import ModelCatalog, ModelInfo, Prices, default_catalog, estimate_cost
from echsd.codex.client import ResponsesClient
from echsd.codex.codex_auth import CodexAuth
from echsd.codex.endpoint import Endpoint, make_endpoint
from echsd.codex.errors import (
    AuthFailed,
    BadModelRequest,
    ContextWindowExceeded,
    ModelError,
    OutputInterrupted,
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
    RateLimitsUpdated,
    ReasoningDelta,
    ReasoningDropped,
    Retrying,
    StreamEvent,
    SummaryUnavailable,
    TextDelta,
    Usage,
)
from echsd.codex.ratelimits import Credits, RateLimits, RateLimitWindow
from echsd.codex.request import ResponsesRequest
from echsd.codex.retry import Backoff, RetryBudget
from echsd.codex.shape import custom_tool_as_function, strip_reasoning_items

__all__ = [
    "Credits",
    "ModelCatalog",
    "ModelInfo",
    "OutputInterrupted",
    "Prices",
    "RateLimitWindow",
    "RateLimits",
    "RateLimitsUpdated",
    "ReasoningDropped",
    "RetryBudget",
    "Retrying",
    "SummaryUnavailable",
    "custom_tool_as_function",
    "default_catalog",
    "estimate_cost",
    "strip_reasoning_items",
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
    "make_endpoint",
]
