"""The body of a scrape: Prometheus text (or OpenMetrics, when the scraper asks for it),
written by ``prometheus-client`` from ``DaemonMetrics``' counts and the live gauges.

The library is imported here, at the first scrape, not when the daemon starts.
"""

from __future__ import annotations

from typing import Any, Iterator

from echsd.metrics.families import Counter, DaemonMetrics, Histogram


def render(metrics: DaemonMetrics, accept: str = "") -> tuple[bytes, str]:
    """(body, content type) for a scrape whose ``Accept`` header is ``accept``."""
    from prometheus_client.exposition import choose_encoder

    encoder, content_type = choose_encoder(accept)
    return encoder(_registry(metrics)), content_type


def _registry(metrics: DaemonMetrics) -> Any:
    registry = metrics.registry
    if registry is None:
        from prometheus_client import CollectorRegistry

        registry = CollectorRegistry(auto_describe=False)
        registry.register(_Counted(metrics))
        for collector in metrics.collectors:
            registry.register(collector)
        metrics.registry = registry
    return registry


class _Counted:
    """``DaemonMetrics``' families as the library's metric families."""

    def __init__(self, metrics: DaemonMetrics) -> None:
        self.metrics = metrics

    def describe(self) -> list[Any]:
        return []  # names are checked at collect time; ours never clash

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily

        for family in self.metrics:
            if isinstance(family, Counter):
                counter = CounterMetricFamily(family.name, family.text, labels=family.labels)
                for labels, value in sorted(family.values.items()):
                    counter.add_metric(labels, value)
                yield counter
            elif isinstance(family, Histogram):
                histogram = HistogramMetricFamily(family.name, family.text, labels=family.labels)
                for labels in sorted(family.counts):
                    histogram.add_metric(labels, family.cumulative(labels), family.sums[labels])
                yield histogram
