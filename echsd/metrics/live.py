"""What a scrape reads as it is now: gauges (and totals kept elsewhere) of this node.

The daemon hands ``LiveCollector`` small functions over its parts, so this module knows
none of them: threads by state, approvals pending, the subscribers' backlogs and gaps,
the cluster lease.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping


@dataclass(frozen=True)
class LeaseHealth:
    lease_s: float
    renewed_s_ago: float
    ok: bool  # the last renewal succeeded


@dataclass(frozen=True)
class LiveSources:
    thread_states: Callable[[], Mapping[str, int]]  # this node's threads by state
    approvals_pending: Callable[[], int]
    subscriber_backlog: Callable[[], tuple[int, int]]  # (events, bytes) queued for clients now
    subscriber_totals: Callable[[], tuple[int, int]]  # (events dropped, gaps sent) since start
    lease: Callable[[], LeaseHealth | None]  # None: this daemon runs alone


class LiveCollector:
    """A collector for ``prometheus-client``'s registry (imported at the first scrape)."""

    def __init__(self, sources: LiveSources) -> None:
        self.sources = sources

    def describe(self) -> list[Any]:
        return []

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        sources = self.sources
        threads = GaugeMetricFamily("echsd_threads", "This node's threads by state.", labels=["state"])
        for state, count in sorted(sources.thread_states().items()):
            threads.add_metric([state], count)
        yield threads
        yield GaugeMetricFamily("echsd_approvals_pending", "Tool calls waiting for an approval now.", value=sources.approvals_pending())
        events, size = sources.subscriber_backlog()
        yield GaugeMetricFamily("echsd_subscriber_backlog_events", "Events queued for clients and not yet sent, all connections.", value=events)
        yield GaugeMetricFamily("echsd_subscriber_backlog_bytes", "Their encoded size.", value=size)
        dropped, gaps = sources.subscriber_totals()
        yield CounterMetricFamily("echsd_subscriber_dropped_events", "Events not delivered to a client too slow to keep up.", value=dropped)
        yield CounterMetricFamily("echsd_subscriber_gaps", "events.gap notices sent to clients that fell behind.", value=gaps)
        lease = sources.lease()
        if lease is not None:
            yield GaugeMetricFamily("echsd_cluster_lease_seconds", "How long this node's lease lasts unless renewed.", value=lease.lease_s)
            yield GaugeMetricFamily("echsd_cluster_lease_renewed_seconds_ago", "Since this node's lease was last renewed.", value=lease.renewed_s_ago)
            yield GaugeMetricFamily("echsd_cluster_lease_ok", "1 if the last lease renewal succeeded.", value=1 if lease.ok else 0)
