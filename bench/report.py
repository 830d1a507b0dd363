"""The quick benchmark's outputs: ``latest.json``, a markdown table and a PNG plot.

A ``Figure`` is one measurement beside its raw limit from the same run; the ratio is
``value / raw`` either way (for a throughput, the share of the limit reached; for a time,
how many times the floor it takes). The plot needs matplotlib (the ``bench`` extra); without
it the JSON and the table are still written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

NAME = "latest"


@dataclass(frozen=True)
class Figure:
    key: str
    what: str
    value: float
    unit: str
    raw_what: str
    raw: float
    better: str = "higher"  # or "lower"

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "what": self.what,
            "value": _round(self.value),
            "unit": self.unit,
            "raw": {"what": self.raw_what, "value": _round(self.raw)},
            "ratio": round(self.value / self.raw, 3) if self.raw else None,
            "better": self.better,
        }


def _round(value: float) -> float:
    return round(value) if abs(value) >= 100 else round(value, 2)


def document(measured: dict[str, Any], machine: dict[str, Any]) -> dict[str, Any]:
    """The JSON document: figures (each with its raw limit and ratio), the sweep, the machine."""
    figures = [f.to_json() for f in measured["figures"]]
    rest = {k: v for k, v in measured.items() if k != "figures"}
    return {"machine": machine, "figures": figures, **rest}


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.2f}"


def _offered(point: dict[str, Any]) -> int:
    """Deltas/s the threads of a sweep point ask for (at full speed: unbounded, 0)."""
    return round(point["threads"] * 1000 / point["delay_ms"]) if point["delay_ms"] else 0


def markdown(doc: dict[str, Any], plotted: bool = True) -> str:
    machine = doc["machine"]
    lines = [
        "# echsd quick benchmark (`make bench-quick`)",
        "",
        (
            f"{machine['when']}; {machine['cpus']} cores, load {machine['load_1min_before']} before and "
            f"{machine['load_1min_after']} after; Python {machine['python']}; {machine['wall_s']} s in all."
        ),
        (
            "Each figure is measured beside its raw limit in the same run; the ratio is echsd / raw "
            "(throughput: share of the limit, higher is better; time: multiple of the floor, lower is better)."
        ),
        "",
        "| what | echsd | raw limit | raw | ratio |",
        "|---|---:|---|---:|---:|",
    ]
    for fig in doc["figures"]:
        ratio = "n/a" if fig["ratio"] is None else f"{fig['ratio']:.2f}x"
        arrow = "↑" if fig["better"] == "higher" else "↓"
        lines.append(f"| {fig['what']} | {_number(fig['value'])} {fig['unit']} | {fig['raw']['what']} | {_number(fig['raw']['value'])} {fig['unit']} | {ratio} {arrow} |")
    sweep = doc.get("sweep") or []
    if sweep:
        raw = doc["sweep_raw"]
        lines += [
            "",
            f"## Streaming threads: N at once, each {sweep[0]['deltas_each']} deltas {sweep[0]['delay_ms']:g} ms apart, one client on `*`",
            "",
            (
                f"Raw limits: one mock stream read directly {raw['upstream_stream_deltas_per_s']:,} deltas/s; "
                f"a `status` round trip p50 {raw['status_round_trip']['p50_ms']} ms, p99 {raw['status_round_trip']['p99_ms']} ms."
            ),
            "",
            "| threads | offered deltas/s | delivered deltas/s | latency p50 | latency p99 | gaps |",
            "|---:|---:|---:|---:|---:|---:|",
        ]
        for point in sweep:
            latency = point["latency"]
            lines.append(f"| {point['threads']:,} | {_offered(point):,} | {point['deltas_per_s']:,} | {latency['p50_ms']} ms | {latency['p99_ms']} ms | {point['gaps']} |")
        if plotted:
            lines += ["", f"![delta latency and throughput against streaming threads]({NAME}.png)"]
    return "\n".join(lines) + "\n"


def plot(doc: dict[str, Any], path: Path) -> bool:
    """Latency p50/p99 and deltas/s against the number of streaming threads; False
    without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    sweep = doc["sweep"]
    counts = [p["threads"] for p in sweep]
    fig, (lat, thr) = plt.subplots(1, 2, figsize=(10, 4))
    lat.plot(counts, [p["latency"]["p50_ms"] for p in sweep], "o-", label="p50")
    lat.plot(counts, [p["latency"]["p99_ms"] for p in sweep], "s-", label="p99")
    lat.set(xscale="log", yscale="log", xlabel="streaming threads", ylabel="ms", title="delta latency: upstream to client")
    lat.grid(True, which="both", alpha=0.3)
    raw = doc["sweep_raw"]
    for key, style in (("p50_ms", ":"), ("p99_ms", "-.")):
        lat.axhline(raw["status_round_trip"][key], linestyle=style, color="grey", label=f"raw: status round trip {key[:3]}")
    lat.legend(fontsize="small")
    thr.plot(counts, [_offered(p) for p in sweep], ":", color="grey", label="offered by the threads")
    thr.plot(counts, [p["deltas_per_s"] for p in sweep], "o-", label="delivered to one client")
    thr.axhline(raw["upstream_stream_deltas_per_s"], linestyle="--", color="grey", label="raw: one mock stream, read directly")
    for point in sweep:
        thr.annotate(f"{point['deltas_each']}/thread", (point["threads"], point["deltas_per_s"]), textcoords="offset points", xytext=(4, -12), fontsize="x-small")
    thr.set(xscale="log", yscale="log", xlabel="streaming threads", ylabel="deltas/s", title="delta throughput")
    thr.legend(fontsize="small")
    thr.grid(True, which="both", alpha=0.3)
    machine = doc["machine"]
    fig.suptitle(f"echsd bench-quick, {machine['when']}, {machine['cpus']} cores", fontsize="medium")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def write(doc: dict[str, Any], directory: Path) -> list[Path]:
    """``latest.json``, ``latest.md`` and (with matplotlib) ``latest.png`` in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    written = [directory / f"{NAME}.json", directory / f"{NAME}.md"]
    plotted = bool(doc.get("sweep")) and plot(doc, directory / f"{NAME}.png")
    written[0].write_text(json.dumps(doc, indent=2) + "\n")
    written[1].write_text(markdown(doc, plotted))
    if plotted:
        written.append(directory / f"{NAME}.png")
    return written
