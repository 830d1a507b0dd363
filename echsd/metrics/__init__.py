"""The daemon's Prometheus metrics (``GET /metrics`` on ``--web`` and ``--metrics``).

- ``families``: ``DaemonMetrics``, every family, counted in plain Python per daemon (tests
  run several daemons in one process), and the label bounds (no thread ids; a label takes
  at most so many distinct values, the rest are counted as ``other``);
- ``taps``: committed events become counters and histograms (one dict lookup per event:
  streamed deltas cost nothing more);
- ``live``: what is read at scrape time (threads by state, approvals pending, subscriber
  backlogs, the cluster lease);
- ``exposition``: the text a scrape gets, written by ``prometheus-client`` (imported then).
"""

from echsd.metrics.exposition import render
from echsd.metrics.families import DaemonMetrics

__all__ = ["DaemonMetrics", "render"]
