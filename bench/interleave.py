"""Interleaved timing: each round runs every variant once, so every variant sees the same
machine load (a shared machine's load moves between rounds, not within one)."""

from __future__ import annotations

import statistics
import time
from typing import Awaitable, Callable

Variant = Callable[[], Awaitable[object]]


async def interleaved(variants: dict[str, Variant], runs: int) -> dict[str, list[float]]:
    """Milliseconds per call of each variant, over ``runs`` rounds after one warm-up round
    (imports, page cache, servers started lazily)."""
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for once in variants.values():
        await once()
    for _ in range(runs):
        for name, once in variants.items():
            started = time.perf_counter()
            await once()
            samples[name].append((time.perf_counter() - started) * 1000)
    return samples


def summary(samples: list[float]) -> dict[str, float]:
    """``p50_ms`` and ``p99_ms`` of one variant's samples."""
    ordered = sorted(samples)
    return {
        "p50_ms": round(statistics.median(ordered), 3),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 3),
    }


def summaries(samples: dict[str, list[float]]) -> dict[str, float]:
    """Every variant's summary, as ``NAME_p50_ms`` and ``NAME_p99_ms``."""
    return {f"{name}_{key}": value for name, values in samples.items() for key, value in summary(values).items()}
