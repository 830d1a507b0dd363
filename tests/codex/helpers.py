"""Helpers shared by the codex tests."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import trio

from echsd.codex import (
    Backoff,
    Endpoint,
    ResponsesClient,
    ResponsesRequest,
    StreamEvent,
    TextDelta,
)
from echsd.codex.events import OUTPUT_EVENTS


@dataclass
class RecordingBackoff(Backoff):
    """Records the delays the client asks for and does not wait (a checkpoint only)."""

    delays: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.sleep = self._record

    async def _record(self, seconds: float) -> None:
        self.delays.append(seconds)
        await trio.lowlevel.checkpoint()


def user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def directive(script: Any) -> dict[str, Any]:
    """A user message scripting the mock with ``mock: <JSON>``."""
    return user("please answer\nmock: " + json.dumps(script))


def request(*items: dict[str, Any], **kwargs: Any) -> ResponsesRequest:
    return ResponsesRequest(model="mock-model", instructions="be brief", input=list(items), **kwargs)


def client_for(base_url: str, backoff: Backoff | None = None, **kwargs: Any) -> ResponsesClient:
    kwargs.setdefault("idle_timeout_s", 5.0)
    return ResponsesClient(Endpoint(base_url), backoff=backoff or RecordingBackoff(), **kwargs)


async def collect_with(client: ResponsesClient, req: ResponsesRequest, budget: Any) -> tuple[list[StreamEvent], Exception | None]:
    """Like ``collect_until_error`` with an explicit retry budget (re-requests share it)."""
    events: list[StreamEvent] = []
    with trio.fail_after(10):
        try:
            async with client.stream(req, budget=budget) as stream:
                async for event in stream:
                    events.append(event)
        except Exception as exc:  # noqa: BLE001 - the test inspects it
            return events, exc
    return events, None


async def collect(client: ResponsesClient, req: ResponsesRequest) -> list[StreamEvent]:
    events: list[StreamEvent] = []
    with trio.fail_after(10):
        async with client.stream(req) as stream:
            async for event in stream:
                events.append(event)
    return events


def text_of(events: list[StreamEvent]) -> str:
    return "".join(e.delta for e in events if isinstance(e, TextDelta))


def output_of(events: list[StreamEvent]) -> list[StreamEvent]:
    """The model's output among the events (no retries, rate limits or notices)."""
    return [e for e in events if isinstance(e, OUTPUT_EVENTS)]


def of_type(events: list[StreamEvent], kind: type) -> list:
    return [e for e in events if isinstance(e, kind)]


async def collect_until_error(client: ResponsesClient, req: ResponsesRequest) -> tuple[list[StreamEvent], Exception | None]:
    """The events delivered, and the error that ended the stream (None if it completed)."""
    events: list[StreamEvent] = []
    with trio.fail_after(10):
        try:
            async with client.stream(req) as stream:
                async for event in stream:
                    events.append(event)
        except Exception as exc:  # noqa: BLE001 - the test inspects it
            return events, exc
    return events, None
