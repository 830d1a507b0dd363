"""``echsd probe [PROMPT]``: one streaming request to the configured model endpoint.

Resolves provider, base URL and model exactly like ``serve``. Prints the reply as it
streams; on failure exits 1 with one line on stderr saying why. Retries are kept short
so that a dead endpoint fails fast. The request is built for the model as a thread's
would be (the model's default reasoning effort, no tools). With ``--model`` it first
says on stderr what the catalog knows about the model and which request fields are sent.
Without credentials ``auto`` resolves to the built-in mock: probing that proves nothing
about a real endpoint, so it is refused unless ``--provider mock`` is explicit.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import click
import trio

from echsd.cli.cmd_models import describe_features, describe_prices, describe_reasoning
from echsd.cli.options import model_options, settings_from_flags
from echsd.codex import (
    AuthFailed,
    Backoff,
    ModelError,
    ModelInfo,
    RateLimited,
    ReasoningDropped,
    ResponsesClient,
    ResponsesRequest,
    StreamBroken,
    SummaryUnavailable,
    TextDelta,
    UpstreamUnavailable,
)
from echsd.codex.mock import open_mock_upstream
from echsd.codex.shape import request_body
from echsd.logs import configure
from echsd.settings import Settings

DEFAULT_PROMPT = "Say hello in five words."
PROBE_RETRIES = 2


@click.command()
@model_options
@click.argument("prompt", required=False, default=DEFAULT_PROMPT)
def probe(prompt: str, **flags: Any) -> None:
    """Ask the model endpoint once; print the reply.

    Sends PROMPT and streams the answer; exit 1 with one line saying why when it fails.
    """
    # Retry warnings would break the "one line on stderr" promise; ECHS_LOG_LEVEL still wins.
    configure(level=os.environ.get("ECHS_LOG_LEVEL") or "error")
    settings = settings_from_flags(**flags)
    if settings.provider == "mock" and settings.provider_requested != "mock":
        click.echo(
            f"echsd probe: no model credentials found (no ChatGPT login in {settings.codex_home / 'auth.json'}, "
            "OPENAI_API_KEY not set), so only the built-in mock model could answer; "
            "pass --provider mock to probe the mock",
            err=True,
        )
        raise SystemExit(1)
    info = settings.catalog.get(settings.model)
    request = ResponsesRequest(
        model=settings.model,
        instructions="You are a helpful assistant.",
        input=[{"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]}],
        reasoning_effort=info.default_effort if info.reasoning else None,
    )
    if flags.get("model"):
        _report(info, request)
    reason = trio.run(_probe, settings, request)
    if reason is not None:
        click.echo(f"echsd probe: {reason}", err=True)
        raise SystemExit(1)


def _report(info: ModelInfo, request: ResponsesRequest) -> None:
    """What the catalog says about the model, and the request fields sent (stderr)."""
    if info.known or info.family:
        features = ", ".join(describe_features(info)) or "no summaries, custom tools or parallel tools"
        catalog = (
            f"reasoning: {describe_reasoning(info)}; {features}; window {info.context_window:,} tokens, "
            f"compacts at {info.compact_at:,}; USD/1M in cached out: {describe_prices(info)}"
        )
        if not info.known:
            catalog = f"not in the catalog, judged by family {info.family}: {catalog}"
    else:
        catalog = "not in the catalog: no reasoning parameters, 128,000-token window assumed, no prices"
    click.echo(f"echsd probe: model {info.model}: {catalog}", err=True)
    body = request_body(request, info)
    fields = [name for name in body if name not in ("reasoning", "include")]
    if "reasoning" in body:
        fields.append("reasoning " + " ".join(f"{k}={v}" for k, v in body["reasoning"].items()))
    if "include" in body:
        fields.append("include " + ",".join(body["include"]))
    click.echo(f"echsd probe: request fields: {', '.join(fields)}", err=True)


async def _probe(settings: Settings, request: ResponsesRequest) -> str | None:
    if settings.provider == "mock":
        with tempfile.TemporaryDirectory(prefix="echsd-probe-") as private:  # mode 0700
            async with open_mock_upstream(unix_socket=Path(private) / "mock.sock") as mock:
                return await _ask(settings, request, mock.base_url, str(mock.unix_socket))
    return await _ask(settings, request)


async def _ask(settings: Settings, request: ResponsesRequest, base_url: str | None = None, unix_socket: str | None = None) -> str | None:
    """Stream one reply to stdout; the failure reason, or None on success."""
    endpoint = settings.endpoint(base_url, unix_socket)
    client = ResponsesClient(
        endpoint,
        catalog=settings.catalog,
        max_retries=PROBE_RETRIES,
        connect_timeout_s=5.0,
        idle_timeout_s=60.0,
        backoff=Backoff(base_s=0.25, max_s=2.0, max_hint_s=5.0),
    )
    printed = False
    try:
        async with client.stream(request) as events:
            async for event in events:
                if isinstance(event, TextDelta):
                    sys.stdout.write(event.delta)
                    sys.stdout.flush()
                    printed = True
                elif isinstance(event, SummaryUnavailable):
                    click.echo(f"echsd probe: resent without reasoning.summary: {_one_line(event.message)}", err=True)
                elif isinstance(event, ReasoningDropped):
                    click.echo(f"echsd probe: resent without reasoning items: {_one_line(event.message)}", err=True)
        sys.stdout.write("\n")
        return None
    except ModelError as exc:
        if printed:
            sys.stdout.write("\n")
        return _reason(exc, endpoint.responses_url)
    finally:
        sys.stdout.flush()
        await client.aclose()


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _reason(exc: ModelError, url: str) -> str:
    """One line naming the kind of failure; the error's own message carries the detail."""
    message = _one_line(exc.message)
    if isinstance(exc, AuthFailed):
        return f"bad credentials: {message}"
    if isinstance(exc, RateLimited):
        return message if message.startswith("rate limited") else f"rate limited: {message}"
    if isinstance(exc, UpstreamUnavailable):
        cause = exc.cause
        if isinstance(cause, UpstreamUnavailable) and cause.status is None:
            return f"unreachable: {cause.message}"
        if isinstance(cause, StreamBroken):
            return f"malformed or cut-short stream from {url}: {_one_line(cause.message)}"
        return message
    if isinstance(exc, StreamBroken):
        return f"malformed or cut-short stream from {url}: {message}"
    return f"upstream error ({exc.code}): {message}"
