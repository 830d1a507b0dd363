"""Compacting a history's head at the model endpoint (the IO half of ``compaction.py``).

The endpoint's own ``responses/compact`` call is used where it exists; an endpoint that
answers it with 404 or 405 (a local server, say) is asked for a summary instead, and
remembered as one without the call. Cancellation (an interrupt) goes straight through.
"""

from __future__ import annotations

from typing import Any

from echsd.codex import BadModelRequest, ItemDone, ResponsesClient, ResponsesRequest
from echsd.logs import get_logger
from echsd.threads.compaction import summary_history, summary_input
from echsd.threads.config import ThreadConfig
from echsd.threads.history import last_assistant_text

log = get_logger(__name__)

_no_compact_call: set[str] = set()  # compact URLs that answered 404/405: endpoint facts, process-wide


async def compact_head(client: ResponsesClient, config: ThreadConfig, head: list[dict[str, Any]], thread_id: str) -> list[dict[str, Any]]:
    """What replaces ``head`` in the history."""
    url = client.endpoint.compact_url
    if url not in _no_compact_call:
        try:
            instructions = config.rendered_instructions(client.catalog.prompt(config.model))
            return await client.compact(model=config.model, instructions=instructions, input=head, session_id=thread_id)
        except BadModelRequest as exc:
            if exc.status not in (404, 405):
                raise
            _no_compact_call.add(url)
            log.info("the endpoint has no compact call: compacting by summary", url=url)
    return summary_history(await _summary(client, config, head, thread_id))


async def _summary(client: ResponsesClient, config: ThreadConfig, head: list[dict[str, Any]], thread_id: str) -> str:
    request = ResponsesRequest(
        model=config.model,
        instructions=config.rendered_instructions(client.catalog.prompt(config.model)),
        input=summary_input(head),
        reasoning_effort=config.reasoning,
        reasoning_summary=None,
        session_id=thread_id,
    )
    items: list[dict[str, Any]] = []
    async with client.stream(request) as events:
        async for event in events:
            if isinstance(event, ItemDone):
                items.append(event.item)
    return last_assistant_text(items)
