"""``echsd probe [PROMPT]``: one streaming request to the configured model endpoint.

Resolves provider, base URL and model exactly like ``serve``. Prints the reply as it
streams; on failure exits 1 with one line on stderr saying why. Retries are kept short
so that a dead endpoint fails fast.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import click
import trio

from echsd.cli.options import settings_from_flags, settings_options
from echsd.codex import (
    AuthFailed,
    Backoff,
    ModelError,
    RateLimited,
    ResponsesClient,
    ResponsesRequest,
    StreamBroken,
    TextDelta,
    UpstreamUnavailable,
    endpoint_from_settings,
)
from echsd.codex.mock import open_mock_upstream
from echsd.logs import configure
from echsd.settings import Settings

DEFAULT_PROMPT = "Say hello in five words."
PROBE_RETRIES = 2


@click.command()
@settings_options
@click.argument("prompt", required=False, default=DEFAULT_PROMPT)
def probe(prompt: str, **flags: Any) -> None:
    """Send PROMPT to the model endpoint and print the streamed reply."""
    # Retry warnings would break the "one line on stderr" promise; ECHS_LOG_LEVEL still wins.
    configure(level=os.environ.get("ECHS_LOG_LEVEL") or "error")
    settings = settings_from_flags(**flags)
    reason = trio.run(_probe, settings, prompt)
    if reason is not None:
        click.echo(f"echsd probe: {reason}", err=True)
        raise SystemExit(1)


async def _probe(settings: Settings, prompt: str) -> str | None:
    if settings.provider == "mock":
        async with open_mock_upstream() as mock:
            return await _ask(settings, mock.base_url, prompt)
    return await _ask(settings, None, prompt)


async def _ask(settings: Settings, base_url: str | None, prompt: str) -> str | None:
    """Stream one reply to stdout; the failure reason, or None on success."""
    endpoint = endpoint_from_settings(settings, base_url)
    client = ResponsesClient(
        endpoint,
        max_retries=PROBE_RETRIES,
        connect_timeout_s=5.0,
        idle_timeout_s=60.0,
        backoff=Backoff(base_s=0.25, max_s=2.0, max_hint_s=5.0),
    )
    request = ResponsesRequest(
        model=settings.model,
        instructions="You are a helpful assistant.",
        input=[{"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]}],
    )
    printed = False
    try:
        async with client.stream(request) as events:
            async for event in events:
                if isinstance(event, TextDelta):
                    sys.stdout.write(event.delta)
                    sys.stdout.flush()
                    printed = True
        sys.stdout.write("\n")
        return None
    except ModelError as exc:
        if printed:
            sys.stdout.write("\n")
        return _reason(exc, endpoint.responses_url)
    finally:
        sys.stdout.flush()
        await client.aclose()


def _reason(exc: ModelError, url: str) -> str:
    """One line naming the kind of failure; the error's own message carries the detail."""
    message = " ".join(exc.message.split())
    if isinstance(exc, AuthFailed):
        return f"bad credentials: {message}"
    if isinstance(exc, RateLimited):
        return message if message.startswith("rate limited") else f"rate limited: {message}"
    if isinstance(exc, UpstreamUnavailable):
        cause = exc.cause
        if isinstance(cause, UpstreamUnavailable) and cause.status is None:
            return f"unreachable: {cause.message}"
        if isinstance(cause, StreamBroken):
            return f"malformed or cut-short stream from {url}: {cause.message}"
        return message
    if isinstance(exc, StreamBroken):
        return f"malformed or cut-short stream from {url}: {message}"
    return f"upstream error ({exc.code}): {message}"
