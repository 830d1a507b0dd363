"""The daemon process's cyclic garbage collector: fewer, cheaper collections.

With CPython's defaults (700, 10, 10) a streaming daemon spent about 4 µs of each delta's
~19 µs of CPU in the collector (``make bench-quick``, thread times measured in the
collector's callbacks): every delta leaves a few short-lived containers behind, so young
collections ran every few hundred deltas, and every tenth of them walked the older
generations, where everything loaded at start lives (the modules, one record per stored
thread). So ``echsd serve`` (never an embedding program, whose process is not ours)
collects the young generation every 10,000 allocations, and once the daemon is ready
moves everything loaded so far into the permanent generation (``gc.freeze``), which no
collection walks again. Cycles made later are still collected, in fewer passes; measured,
the collector's share fell to about 0.7 µs a delta.
"""

from __future__ import annotations

import gc

THRESHOLDS = (10_000, 20, 20)


def tune() -> None:
    """At the start of the process."""
    gc.set_threshold(*THRESHOLDS)


def settle() -> None:
    """Once the daemon is ready: what start-up loaded is never walked again."""
    gc.freeze()
