"""The soak's samples, summed up: start and end, extremes, and the trend within each
daemon lifetime (a restart resets memory, so a leak shows as growth between restarts)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HOUR_S = 3600.0
LATENCIES = ("status", "send_ack", "delta")  # state.Latencies' kinds, sampled per window


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def slope_per_hour(samples: list[dict[str, Any]], key: str) -> float | None:
    """Least-squares slope of ``key`` against time, pooled over lifetimes (each lifetime
    keeps its own level; only the growth within each counts)."""
    by_life: dict[int, list[tuple[float, float]]] = {}
    for sample in samples:
        if sample.get(key) is not None:
            by_life.setdefault(sample["generation"], []).append((sample["t"], sample[key]))
    cross = spread = 0.0
    for points in by_life.values():
        if len(points) < 3:
            continue
        t_mean = sum(t for t, _ in points) / len(points)
        y_mean = sum(y for _, y in points) / len(points)
        cross += sum((t - t_mean) * (y - y_mean) for t, y in points)
        spread += sum((t - t_mean) ** 2 for t, _ in points)
    return round(cross / spread * HOUR_S, 2) if spread else None


def series(samples: list[dict[str, Any]], key: str) -> dict[str, Any]:
    values = [s for s in samples if s.get(key) is not None]
    if not values:
        return {}
    lifetimes = []
    for generation in sorted({s["generation"] for s in values}):
        life = [s for s in values if s["generation"] == generation]
        lifetimes.append(
            {
                "generation": generation,
                "from_t": life[0]["t"],
                "to_t": life[-1]["t"],
                "start": life[0][key],
                "end": life[-1][key],
                "max": max(s[key] for s in life),
            }
        )
    return {
        "start": values[0][key],
        "end": values[-1][key],
        "min": min(s[key] for s in values),
        "max": max(s[key] for s in values),
        "per_hour_within_lifetimes": slope_per_hour(values, key),
        "lifetimes": lifetimes,
    }


def summarise(samples: list[dict[str, Any]]) -> dict[str, Any]:
    db = [s for s in samples if s.get("db_mb") is not None]
    span_h = (db[-1]["t"] - db[0]["t"]) / HOUR_S if len(db) > 1 else 0
    return {
        "samples": len(samples),
        "rss_mb": series(samples, "rss_mb"),
        "fds": series(samples, "fds"),
        "os_threads": series(samples, "os_threads"),
        "threads": series(samples, "threads"),
        "tool_processes": series(samples, "tool_processes"),
        "db_mb": {**series(samples, "db_mb"), "per_hour": round((db[-1]["db_mb"] - db[0]["db_mb"]) / span_h, 1) if span_h else None},
        "wal_mb": series(samples, "wal_mb"),
        **{f"{kind}_p99_ms": series(samples, f"{kind}_p99_ms") for kind in LATENCIES},
    }


def _trend(s: dict[str, Any]) -> str:
    return f"within lifetimes {s['per_hour_within_lifetimes']}/h"


def text(summary: dict[str, Any]) -> str:
    """A few lines a person reads, ending with PASS or FAIL."""
    resources, store, restarts = summary["resources"], summary["end"]["store"], summary["restarts"]
    lines = [f"soak: {summary['duration_s']:.0f} s, {summary['threads']} driver threads, containment {summary['containment']}"]
    for key, unit in (("rss_mb", "MB"), ("fds", ""), ("db_mb", "MB"), ("wal_mb", "MB"), ("threads", "")):
        if s := resources.get(key):
            lines.append(f"  {key}: start {s['start']}{unit} end {s['end']}{unit} min {s['min']} max {s['max']}; {_trend(s)}")
    latency = summary["latency"]
    shown = [f"{kind} {latency[kind]['p50_ms']}/{latency[kind]['p99_ms']}" for kind in LATENCIES if kind in latency]
    lines.append(f"  latency p50/p99 ms over the run: {', '.join(shown)}")
    for kind in LATENCIES:
        if s := resources.get(f"{kind}_p99_ms"):
            window = f"{summary['sample_every_s']:g} s window"
            lines.append(f"  {kind} p99 per {window}: first {s['start']} last {s['end']} max {s['max']} ms; {_trend(s)}")
    count = store.get
    lines.append(
        f"  turns: {count('turn.completed', 0)} completed, {count('turn.interrupted', 0)} interrupted,"
        f" {count('turn.error', 0)} errors; tool calls {count('tool.completed', 0)}"
    )
    lines.append(
        f"  stored: {count('events', 0)} events ({count('turn.delta', 0)} deltas) on {count('threads', 0)} threads;"
        f" {count('acknowledged', 0)} inputs acknowledged"
    )
    lines.append(f"  actions: {summary['actions']}")
    kills = sum(r["how"] == "SIGKILL" for r in restarts)
    stop_max = max([r["stop_s"] for r in restarts if "stop_s" in r] + [summary["end"]["final_stop_s"]])
    ready_max = max((r["ready_s"] for r in restarts if "ready_s" in r), default=0)
    lines.append(
        f"  restarts: {len(restarts) - kills} SIGTERM, {kills} SIGKILL; graceful stop max {stop_max} s, ready again max {ready_max} s"
    )
    lines.append(f"  request errors: {summary['errors']}")
    lines.append(
        f"  streams followed: {summary['followed_events']} events over {summary['follower_resumes']} resumes,"
        f" {summary['followed_gaps']} declared gaps"
    )
    lines.append(f"  violations: {len(summary['violations'])} {summary['violation_kinds']}")
    lines.append("RESULT: PASS" if not summary["violations"] else f"RESULT: FAIL ({', '.join(summary['violation_kinds'])})")
    return "\n".join(lines)
