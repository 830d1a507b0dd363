"""``ResponsesClient``: streaming ``POST /responses`` and ``POST /responses/compact``.

Retry rules (the thread runtime relies on them):
- Retried, with backoff: transport failures, 5xx, 429 and ``rate_limit_exceeded`` /
  transient ``server_error`` events, but only while nothing has been yielded to the
  caller. Once an event was handed out, every failure surfaces as-is (a retry would
  replay output the caller has already acted on).
- Never retried: other 4xx, ``usage_limit``, context-window errors, malformed streams.
  A 401 gets one credential repair (``Auth.recover_unauthorized``) and one more try.
- ``trio.Cancelled`` is never caught: only our own exception types are.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import AsyncGenerator, AsyncIterator, Mapping

import orjson
import trio

from echsd.codex.classify import error_from_http
from echsd.codex.endpoint import Endpoint
from echsd.codex.errors import AuthFailed, ModelError, StreamBroken, UpstreamUnavailable
from echsd.codex.events import StreamEvent
from echsd.codex.http import HttpClient, StreamingResponse, TransportFailure
from echsd.codex.reducer import ResponseReducer
from echsd.codex.request import ResponsesRequest
from echsd.codex.retry import Attempts, Backoff
from echsd.codex.sse import SseDecoder

DRAIN_S = 1.0  # after response.completed, read the rest for this long so the connection is reused


class ResponsesClient:
    def __init__(
        self,
        endpoint: Endpoint,
        *,
        max_retries: int = 5,
        idle_timeout_s: float = 300.0,
        connect_timeout_s: float = 10.0,
        backoff: Backoff | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.max_retries = max_retries
        self._backoff = backoff or Backoff()
        self._http = HttpClient(connect_timeout_s=connect_timeout_s, read_timeout_s=idle_timeout_s)

    def stream(self, request: ResponsesRequest) -> AbstractAsyncContextManager[AsyncIterator[StreamEvent]]:
        """``async with client.stream(req) as events: async for ev in events: ...``

        Leaving the block (normally, by ``break``, an exception or cancellation) closes
        the HTTP stream.
        """
        return self._stream(request)

    @asynccontextmanager
    async def _stream(self, request: ResponsesRequest) -> AsyncIterator[AsyncIterator[StreamEvent]]:
        events = self._events(request)
        try:
            yield events
        finally:
            await events.aclose()

    async def _events(self, request: ResponsesRequest) -> AsyncGenerator[StreamEvent, None]:
        url = self.endpoint.responses_url
        body = orjson.dumps(request.body())
        attempts = Attempts(self.max_retries, self._backoff, url)
        reauthorized = False
        while True:
            delivered = False
            sent: dict[str, str] = {}
            try:
                sent = await self._headers("text/event-stream")
                async with self._http.stream_post(url, body, sent) as response:
                    if response.status != 200:
                        raise error_from_http(response.status, response.headers, await response.read(), url=url)
                    decoder, reducer = SseDecoder(), ResponseReducer()
                    while True:
                        chunk = await response.next_chunk()
                        for sse in decoder.feed(chunk) if chunk else decoder.close():
                            event = reducer.feed(sse)
                            if event is None:
                                continue
                            delivered = True
                            yield event
                            if reducer.completed is not None:
                                await _drain(response)
                                return
                        if not chunk:
                            reducer.finish()  # raises StreamBroken: no response.completed
                            return
            except TransportFailure as exc:
                error = _from_transport(exc, delivered)
            except ModelError as exc:
                error = exc
            if delivered:
                raise error
            if not reauthorized and await self._reauthorize(error, sent):
                reauthorized = True
                continue
            await attempts.after_failure(error)

    async def compact(self, *, model: str, instructions: str, input: list[dict]) -> list[dict]:
        """``POST <base>/responses/compact``: the items that replace ``input`` in history."""
        url = self.endpoint.compact_url
        body = orjson.dumps({"model": model, "instructions": instructions, "input": input})
        attempts = Attempts(self.max_retries, self._backoff, url)
        reauthorized = False
        while True:
            sent: dict[str, str] = {}
            try:
                sent = await self._headers("application/json")
                status, headers, raw = await self._http.post(url, body, sent)
                if status != 200:
                    raise error_from_http(status, headers, raw, url=url)
                return _compacted_items(raw, url)
            except TransportFailure as exc:
                error = _from_transport(exc, delivered=False)
            except ModelError as exc:
                error = exc
            if not reauthorized and await self._reauthorize(error, sent):
                reauthorized = True
                continue
            await attempts.after_failure(error)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _headers(self, accept: str) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": accept, **self.endpoint.headers}
        headers.update(await self.endpoint.auth.headers(self._http))
        return headers

    async def _reauthorize(self, error: ModelError, sent: Mapping[str, str]) -> bool:
        if not (isinstance(error, AuthFailed) and error.status == 401):
            return False
        return await self.endpoint.auth.recover_unauthorized(self._http, sent)


def _from_transport(exc: TransportFailure, delivered: bool) -> ModelError:
    if exc.kind == "connect":
        error: ModelError = UpstreamUnavailable(exc.message, retryable=True)
    elif delivered and exc.kind == "timeout":
        error = StreamBroken(f"the stream stalled: {exc.message}")
    elif delivered:
        error = StreamBroken(f"the stream was cut off before response.completed: {exc.message}")
    else:
        error = StreamBroken(exc.message, retryable=True)
    error.__cause__ = exc
    return error


async def _drain(response: StreamingResponse) -> None:
    with trio.move_on_after(DRAIN_S):
        try:
            while await response.next_chunk():
                pass
        except TransportFailure:
            pass


def _compacted_items(raw: bytes, url: str) -> list[dict]:
    try:
        answer = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise StreamBroken(f"malformed compaction answer from {url} (not JSON)") from None
    output = answer.get("output") if isinstance(answer, dict) else None
    if not isinstance(output, list) or not all(isinstance(item, dict) for item in output):
        raise StreamBroken(f"malformed compaction answer from {url}: no list of items in 'output'")
    return output
