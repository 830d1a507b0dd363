"""``DaemonMetrics``: every metric family of one daemon, counted in plain Python.

Counters and histograms are dicts of numbers keyed by label values, changed in place (no
lock, no object per observation: the daemon is one event loop); ``prometheus-client`` is
imported only when a scrape asks for them (``exposition``), so a daemon nobody scrapes never
loads it (``tests/test_start_imports.py``). Labels are bounded: no thread, turn or call ids
ever; names that come from outside (models, tools: MCP servers and clients register tools
too) go through ``Bounded``, which lets a label take at most ``limit`` distinct values and
counts the rest as ``other``.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Any, Iterator

OTHER = "other"
LABEL_CHARS = 64  # a label value longer than this is cut
SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)
MODEL_SECONDS = (0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120, 300)
STORE_SECONDS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5)
BATCH_SIZES = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000)


class Bounded:
    """At most ``limit`` distinct values of one label; later newcomers become ``other``."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._seen: set[str] = set()

    def __call__(self, value: object) -> str:
        text = str(value or "unknown")[:LABEL_CHARS]
        if text in self._seen:
            return text
        if len(self._seen) < self.limit:
            self._seen.add(text)
            return text
        return OTHER


class Counter:
    kind = "counter"

    def __init__(self, name: str, text: str, labels: tuple[str, ...] = ()) -> None:
        self.name, self.text, self.labels = name, text, labels
        self.values: dict[tuple[str, ...], float] = {} if labels else {(): 0.0}

    def inc(self, *labels: str, amount: float = 1.0) -> None:
        self.values[labels] = self.values.get(labels, 0.0) + amount


class Histogram:
    kind = "histogram"

    def __init__(self, name: str, text: str, labels: tuple[str, ...] = (), *, buckets: tuple[float, ...]) -> None:
        self.name, self.text, self.labels, self.buckets = name, text, labels, buckets
        self.counts: dict[tuple[str, ...], list[int]] = {}  # per bucket (and +Inf), not cumulative
        self.sums: dict[tuple[str, ...], float] = {}
        if not labels:
            self.counts[()] = [0] * (len(buckets) + 1)
            self.sums[()] = 0.0

    def observe(self, *labels: str, value: float) -> None:
        counts = self.counts.get(labels)
        if counts is None:
            counts = self.counts[labels] = [0] * (len(self.buckets) + 1)
            self.sums[labels] = 0.0
        counts[bisect_left(self.buckets, value)] += 1
        self.sums[labels] += value

    def cumulative(self, labels: tuple[str, ...]) -> list[tuple[str, int]]:
        total, out = 0, []
        for bound, count in zip((*self.buckets, float("inf")), self.counts[labels]):
            total += count
            out.append(("+Inf" if bound == float("inf") else repr(float(bound)), total))
        return out


Family = Counter | Histogram


class DaemonMetrics:
    def __init__(self, *, max_models: int = 32, max_tools: int = 128) -> None:
        self.model = Bounded(max_models)
        self.tool = Bounded(max_tools)
        self.reason = Bounded(64)  # codes and reasons (of errors, retries, interrupts)
        self.families: list[Family] = []
        self.collectors: list[Any] = []  # read at scrape time (``live.LiveCollector``)
        self.registry: Any = None  # prometheus-client's, made at the first scrape (``exposition``)
        c, h = self._counter, self._histogram
        self.turns_started = c("echsd_turns_started", "Turns started.")
        self.turns_finished = c("echsd_turns_finished", "Turns that ended, by outcome: completed, interrupted or error.", "outcome")
        self.turns_interrupted = c("echsd_turns_interrupted", "Interrupted turns, by why: interrupt, pause, kill, shutdown, restart.", "reason")
        self.turn_errors = c("echsd_turn_errors", "Turns that ended in error, by error code.", "code")
        self.tokens = c("echsd_tokens", "Model tokens by model and kind: input, cached (of input), output, reasoning (of output).", "model", "kind")
        self.cost = c("echsd_cost_usd", "Estimated cost in US dollars (the model catalog's prices) by model.", "model")
        self.tool_calls = c("echsd_tool_calls", "Tool calls by tool and outcome: ok, error, denied.", "tool", "outcome")
        self.tool_seconds = h("echsd_tool_call_duration_seconds", "How long tool calls ran, by tool.", "tool", buckets=SECONDS)
        self.model_seconds = h(
            "echsd_model_request_duration_seconds",
            "Model requests from sending to the end of the response stream, by model and outcome (completed, error, cancelled).",
            "model", "outcome", buckets=MODEL_SECONDS,
        )  # fmt: skip
        self.first_output_seconds = h(
            "echsd_model_time_to_first_token_seconds", "From sending a model request to its first output (text, reasoning or an item), by model.",
            "model", buckets=MODEL_SECONDS,
        )  # fmt: skip
        self.retries = c("echsd_model_retries", "Model requests retried, by reason (the error's code).", "reason")
        self.store_batch_units = h("echsd_store_commit_batch_units", "Units (atomic writes) per store commit batch.", buckets=BATCH_SIZES)
        self.store_batch_events = h("echsd_store_commit_batch_events", "Events per store commit batch.", buckets=BATCH_SIZES)
        self.store_seconds = h("echsd_store_commit_duration_seconds", "How long one store commit batch took.", buckets=STORE_SECONDS)
        self.sandbox_denials = c(
            "echsd_sandbox_denials",
            "Tool calls the sandbox stopped, by tool and kind: command (failed with a permission or network error while confined), "
            "patch (a change outside the writable roots), unenforceable (a sandbox this machine cannot enforce).",
            "tool", "kind",
        )  # fmt: skip
        self.approvals_requested = c("echsd_approvals_requested", "Tool calls that asked for approval.")
        self.approvals_resolved = c("echsd_approvals_resolved", "Approval requests that ended, by decision: approve, deny, timeout, cancelled.", "decision")
        self.subagents = c("echsd_subagent_turns_finished", "Sub-agent turns that ended, by status.", "status")
        self.hook_deliveries = c(
            "echsd_hook_deliveries", "Hook deliveries by kind (command, webhook) and outcome (ok, failed, timeout, retry, dropped).", "kind", "outcome"
        )

    def _counter(self, name: str, text: str, *labels: str) -> Counter:
        family = Counter(name, text, labels)
        self.families.append(family)
        return family

    def _histogram(self, name: str, text: str, *labels: str, buckets: tuple[float, ...]) -> Histogram:
        family = Histogram(name, text, labels, buckets=buckets)
        self.families.append(family)
        return family

    def add_collector(self, collector: Any) -> None:
        """Something read at scrape time (``live``): ``collect()`` yields metric families."""
        self.collectors.append(collector)

    def __iter__(self) -> Iterator[Family]:
        return iter(self.families)

    # ---- observations the daemon's parts make directly ------------------------------------

    def model_request(self, model: str, outcome: str, seconds: float, first_output_s: float | None) -> None:
        """One model request ended (``ResponsesClient``'s observer)."""
        label = self.model(model)
        self.model_seconds.observe(label, outcome, value=seconds)
        if first_output_s is not None:
            self.first_output_seconds.observe(label, value=first_output_s)

    def store_batch(self, units: int, events: int, seconds: float) -> None:
        """One commit batch of the store writer."""
        self.store_batch_units.observe(value=units)
        self.store_batch_events.observe(value=events)
        self.store_seconds.observe(value=seconds)

    def hook(self, kind: str, outcome: str) -> None:
        self.hook_deliveries.inc(kind, outcome)

