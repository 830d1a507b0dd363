"""The request the thread runtime hands to ``ResponsesClient.stream``.

It says what the thread wants; ``echsd.codex.shape`` decides, from the model catalog,
what of it the body may carry (``shape.request_body``).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ResponsesRequest:
    model: str
    instructions: str
    input: list[dict]
    tools: list[dict] = field(default_factory=list)
    parallel_tool_calls: bool = True  # allowed; sent only with tools, and only if the model has them
    reasoning_effort: str | None = None  # none|minimal|low|medium|high|xhigh; None omits "reasoning"
    reasoning_summary: str | None = None  # None: the catalog's; sent only where the model (and the organisation) has summaries
    verbosity: str | None = None  # None: the catalog's (text.verbosity), if any
    prompt_cache_key: str | None = None
    session_id: str | None = None  # the thread id: the session-id and thread-id headers, for cache affinity
    previous_response_id: str | None = None  # chain onto a stored response: ``input`` holds only what is new
    store: bool = False  # ask the endpoint to keep this response (needed to chain onto it later)
