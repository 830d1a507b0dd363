"""``ResponsesClient``: streaming ``POST /responses`` and ``POST /responses/compact``.

The body follows the model catalog (``echsd.codex.shape``). Rules the thread runtime
relies on:

- Retried, with backoff: transport failures, 5xx, 429, ``rate_limit_exceeded`` and
  transient ``server_error`` events. Before each wait the stream yields ``Retrying``.
  Retries come from one ``RetryBudget`` per logical request (``retry_budget()``).
- After output was yielded the client cannot retry by itself: a retryable failure then
  raises ``OutputInterrupted`` (its retry already charged to the budget), and the caller
  re-requests with ``stream(request, budget=same_budget)``; see ``OutputInterrupted``.
- Never retried: other 4xx, usage limits, context-window errors. A 401 gets one
  credential repair (``Auth.recover_unauthorized``) and one more try.
- Two 400s get one corrected resend, announced by an event: "must be verified to generate
  reasoning summaries" (``SummaryUnavailable``, resent without ``reasoning.summary``, and
  remembered for the endpoint in ``EndpointMemory``: no later request of any thread asks
  again) and a refusal naming reasoning items, ``invalid_encrypted_content`` or "Item with
  id ... not found" (``ReasoningDropped``, resent without the items named, or without any
  reasoning when none is named; the thread then drops them from its history).
- Headers, as Codex 0.169 sends them: the provider's (``Endpoint.headers``), and per
  request ``session-id``, ``thread-id`` and ``x-client-request-id`` (the thread id) and,
  to the ChatGPT backend, ``x-codex-routing-hint: model=<model>``.
- Rate-limit headers and ``codex.rate_limits`` events become ``RateLimitsUpdated``.
  ``Retrying``, ``RateLimitsUpdated`` and the two notices are not output.
- ``trio.Cancelled`` is never caught: only our own exception types are.
"""

from __future__ import annotations

import sys
import time
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import replace
from typing import AsyncGenerator, AsyncIterator, Callable, Mapping

import orjson
import trio

import echsd.codex.ratelimits as ratelimits
from echsd.codex.catalog import ModelCatalog, default_catalog
from echsd.codex.classify import error_from_http, is_summary_refusal, refused_reasoning
from echsd.codex.endpoint import Endpoint
from echsd.codex.endpoint_memory import EndpointMemory
from echsd.codex.errors import AuthFailed, ModelError, OutputInterrupted, StreamBroken, UpstreamUnavailable
from echsd.codex.events import OUTPUT_EVENTS, RateLimitsUpdated, ReasoningDelta, ReasoningDropped, StreamEvent, SummaryUnavailable, TextDelta
from echsd.codex.http import HttpClient, StreamingResponse, TransportFailure
from echsd.codex.model_list import ListingError, ModelListing, parse_listing
from echsd.codex.reducer import ResponseReducer
from echsd.codex.request import ResponsesRequest
from echsd.codex.retry import Backoff, RetryBudget
from echsd.codex.shape import FALLBACK_INSTRUCTIONS, Fallbacks, request_body, strip_reasoning_items
from echsd.codex.sse import SseDecoder, SseEvent, SseTooLarge
from echsd.logs import get_logger

log = get_logger(__name__)

DRAIN_S = 1.0  # after response.completed, read the rest for this long so the connection is reused


class ResponsesClient:
    def __init__(
        self,
        endpoint: Endpoint,
        *,
        catalog: ModelCatalog | None = None,
        max_retries: int = 5,
        idle_timeout_s: float = 300.0,
        connect_timeout_s: float = 10.0,
        backoff: Backoff | None = None,
        memory: EndpointMemory | None = None,
        observer: RequestObserver | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.observer = observer  # told of every model request's outcome and timing (metrics)
        self.catalog = catalog or default_catalog()
        self.memory = memory or EndpointMemory(endpoint.base_url)
        self.max_retries = max_retries
        self._backoff = backoff or Backoff()
        self._http = HttpClient(connect_timeout_s=connect_timeout_s, read_timeout_s=idle_timeout_s, unix_socket=endpoint.unix_socket)

    def retry_budget(self) -> RetryBudget:
        """A fresh budget for one logical model request (keep it across re-requests)."""
        return RetryBudget(self.max_retries, self._backoff, self.endpoint.responses_url)

    def stream(self, request: ResponsesRequest, *, budget: RetryBudget | None = None) -> AbstractAsyncContextManager[EventStream]:
        """``async with client.stream(req) as events: async for ev in events: ...``

        Leaving the block (normally, by ``break``, an exception or cancellation) closes
        the HTTP stream. Pass the same ``budget`` again to re-request after
        ``OutputInterrupted``. ``events.batches()`` gives the same events in lists, one per
        receive: what arrived together, for a caller that handles it together.
        """
        return self._stream(request, budget or self.retry_budget())

    @asynccontextmanager
    async def _stream(self, request: ResponsesRequest, budget: RetryBudget) -> AsyncIterator[EventStream]:
        batches = self._batches(request, budget)
        try:
            yield EventStream(batches)
        finally:
            await batches.aclose()

    async def _batches(self, request: ResponsesRequest, budget: RetryBudget) -> AsyncGenerator[list[StreamEvent], None]:
        url = self.endpoint.responses_url
        info = self.catalog.get(request.model)
        if budget.pending is not None:
            retry, budget.pending = budget.pending, None
            yield [retry]
            await budget.wait(retry)
        fallbacks = Fallbacks()
        reauthorized = False
        while True:
            if self.memory.summaries_refused:
                fallbacks = replace(fallbacks, drop_summary=True)
            payload = request_body(request, info, fallbacks)
            body = orjson.dumps(payload)
            delivered = False
            sent: dict[str, str] = {}
            timing = _Timing(self.observer, request.model)
            try:
                sent = await self._headers("text/event-stream", request.session_id, request.model)
                async with self._http.stream_post(url, body, sent) as response:
                    limits = ratelimits.from_headers(response.headers)
                    if limits:
                        yield [RateLimitsUpdated(tuple(limits))]
                    if response.status != 200:
                        raise error_from_http(response.status, response.headers, await response.read(), url=url)
                    decoder, reducer = SseDecoder(), ResponseReducer()
                    while True:
                        chunk = await response.next_chunk()
                        batch, failure = _reduce(reducer, decoder.feed(chunk) if chunk else decoder.close())
                        if batch:
                            if not delivered and any(isinstance(event, OUTPUT_EVENTS) for event in batch):
                                delivered = True
                                timing.first_output()
                            yield batch  # the events before a failure in the same chunk go out first
                        if failure is not None:
                            raise failure
                        if reducer.completed is not None:
                            timing.end("completed")
                            await _drain(response)
                            return
                        if not chunk:
                            reducer.finish()  # raises StreamBroken: no response.completed
                            return
            except TransportFailure as exc:
                error = _from_transport(exc, delivered)
            except ModelError as exc:
                error = exc
            except SseTooLarge as exc:
                error = StreamBroken(f"malformed stream from {url}: {exc}")
            finally:
                timing.settle()
            corrected = None if delivered else _corrected(error, payload, fallbacks)
            if corrected is not None:
                fallbacks, notice = corrected
                if isinstance(notice, SummaryUnavailable):
                    await self.memory.refuse_summaries(notice.message)
                yield [notice]
                continue
            if not delivered and not reauthorized and await self._reauthorize(error, sent):
                reauthorized = True
                continue
            retry = budget.charge(error)  # raises the final error when not retryable or spent
            if delivered:
                budget.pending = retry
                raise OutputInterrupted(
                    f"the stream broke after output started ({retry.reason}); "
                    f"retry {retry.attempt} of {retry.max_retries} in {retry.delay_s:.1f} s",
                    attempt=retry.attempt,
                    delay_s=retry.delay_s,
                    cause=error,
                ) from error
            yield [retry]
            await budget.wait(retry)

    async def compact(self, *, model: str, instructions: str, input: list[dict], session_id: str | None = None) -> list[dict]:
        """``POST <base>/responses/compact``: the items that replace ``input`` in history."""
        url = self.endpoint.compact_url
        instructions = instructions if instructions.strip() else FALLBACK_INSTRUCTIONS
        body = orjson.dumps({"model": model, "instructions": instructions, "input": input})
        budget = RetryBudget(self.max_retries, self._backoff, url)
        reauthorized = False
        while True:
            sent: dict[str, str] = {}
            try:
                sent = await self._headers("application/json", session_id, model)
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
            await budget.wait(budget.charge(error))

    async def model_list(self) -> ModelListing:
        """``GET`` the endpoint's model list (``Endpoint.models_url``): one attempt, and one
        more after a credential repair; no retries (the caller keeps the last list)."""
        url = self.endpoint.models_url
        for attempt in range(2):
            sent: dict[str, str] = {}
            try:
                sent = await self._headers("application/json", None, None)
                status, headers, raw = await self._http.get(url, sent)
                if status != 200:
                    raise error_from_http(status, headers, raw, url=url)
                return parse_listing(raw, headers.get("etag"))
            except TransportFailure as exc:
                raise _from_transport(exc, delivered=False) from exc
            except ListingError as exc:
                raise StreamBroken(f"malformed model list from {url}: {exc}") from None
            except ModelError as exc:
                if attempt or not await self._reauthorize(exc, sent):
                    raise
        raise AssertionError("unreachable")

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _headers(self, accept: str, session_id: str | None, model: str | None) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": accept, **self.endpoint.headers}
        if session_id:
            headers.update({"session-id": session_id, "thread-id": session_id, "x-client-request-id": session_id})
        if self.endpoint.provider == "codex" and model:
            headers["x-codex-routing-hint"] = f"model={model}"
        headers.update(await self.endpoint.auth.headers(self._http))
        return headers

    async def _reauthorize(self, error: ModelError, sent: Mapping[str, str]) -> bool:
        if not (isinstance(error, AuthFailed) and error.status == 401):
            return False
        return await self.endpoint.auth.recover_unauthorized(self._http, sent)


class EventStream:
    """The events of one streamed response: one by one (``async for``), or in lists, one
    per receive (``batches()``), by default with the text deltas of one item that came
    together joined into one; not both."""

    __slots__ = ("_batches", "_buffer", "_index")

    def __init__(self, batches: AsyncGenerator[list[StreamEvent], None]) -> None:
        self._batches = batches
        self._buffer: list[StreamEvent] = []
        self._index = 0

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> StreamEvent:
        while self._index >= len(self._buffer):
            self._buffer = await self._batches.__anext__()
            self._index = 0
        event = self._buffer[self._index]
        self._index += 1
        return event

    async def batches(self, *, join: bool = True) -> AsyncGenerator[list[StreamEvent], None]:
        """``join``: each run of one item's deltas in a batch as one delta."""
        async for batch in self._batches:
            yield coalesced(batch) if join and len(batch) > 1 else batch


_JOINABLE = (TextDelta, ReasoningDelta)


def coalesced(batch: list[StreamEvent]) -> list[StreamEvent]:
    """``batch`` with each run of text (or reasoning) deltas of one item joined into one
    delta: what arrived in one receive is one piece of text for whoever shows it."""
    out: list[StreamEvent] = []
    run: list[str] = []  # the texts of the run being joined (its first delta is out[-1])
    for event in batch:
        if type(event) in _JOINABLE and out and type(out[-1]) is type(event) and out[-1].item_id == event.item_id:  # type: ignore[union-attr]
            if not run:
                run.append(out[-1].delta)  # type: ignore[union-attr]
            run.append(event.delta)  # type: ignore[union-attr]
            continue
        if run:
            out[-1] = out[-1]._replace(delta="".join(run))  # type: ignore[union-attr]
            run = []
        out.append(event)
    if run:
        out[-1] = out[-1]._replace(delta="".join(run))  # type: ignore[union-attr]
    return out


def _reduce(reducer: ResponseReducer, events: list[SseEvent]) -> tuple[list[StreamEvent], ModelError | None]:
    """The typed events of one chunk's SSE events, up to ``response.completed``, and the
    failure that stopped them, if one did."""
    batch: list[StreamEvent] = []
    feed = reducer.feed
    for sse in events:
        try:
            event = feed(sse)
        except ModelError as exc:
            return batch, exc
        if event is not None:
            batch.append(event)
            if reducer.completed is not None:
                break
    return batch, None


RequestObserver = Callable[[str, str, float, "float | None"], None]
"""``(model, outcome, seconds, first_output_s)`` of one HTTP request to the endpoint:
outcome ``completed``, ``error`` or ``cancelled``; ``first_output_s`` None when no output came."""


class _Timing:
    """One request's timing, told to the observer once (a few clock reads per request)."""

    __slots__ = ("observer", "model", "started", "first", "done")

    def __init__(self, observer: RequestObserver | None, model: str) -> None:
        self.observer, self.model = observer, model
        self.started = time.monotonic()
        self.first: float | None = None
        self.done = observer is None

    def first_output(self) -> None:
        self.first = time.monotonic() - self.started

    def end(self, outcome: str) -> None:
        if self.done:
            return
        self.done = True
        assert self.observer is not None
        try:
            self.observer(self.model, outcome, time.monotonic() - self.started, self.first)
        except Exception:
            log.exception("model request observer failed")

    def settle(self) -> None:
        """In a ``finally``: how the attempt ended, unless it said so already."""
        if not self.done:
            exc = sys.exc_info()[1]
            self.end("cancelled" if exc is not None and not isinstance(exc, Exception) else "error")


def _corrected(
    error: ModelError, sent: dict, fallbacks: Fallbacks
) -> tuple[Fallbacks, SummaryUnavailable | ReasoningDropped] | None:
    """The one resend a refusal of the ``sent`` body allows (each at most once), or None."""
    if is_summary_refusal(error) and "summary" in sent.get("reasoning", {}):
        return replace(fallbacks, drop_summary=True), SummaryUnavailable(error.message)
    refused = None if fallbacks.drop_reasoning else refused_reasoning(error, sent["input"])
    if refused is not None:
        _, removed = strip_reasoning_items(sent["input"], refused)
        return replace(fallbacks, drop_reasoning=refused), ReasoningDropped(removed, error.message, refused)
    return None


def _from_transport(exc: TransportFailure, delivered: bool) -> ModelError:
    if exc.kind == "connect":
        error: ModelError = UpstreamUnavailable(exc.message, retryable=True)
    elif delivered and exc.kind == "timeout":
        error = StreamBroken(f"the stream stalled: {exc.message}", retryable=True)
    elif delivered:
        error = StreamBroken(f"the stream was cut off before response.completed: {exc.message}", retryable=True)
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
