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


def _ms(latency: dict[str, Any]) -> str:
    return f"{latency['p50_ms']} / {latency['p99_ms']} ms"


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def _sweep_lines(sweep: list[dict[str, Any]]) -> list[str]:
    lines = [
        "",
        "## Streaming threads: N at once, one client on `*`",
        "",
        (
            "Each delta is stamped by the mock when it writes it (one HTTP chunk per SSE event); latency runs "
            "from that write to the client. Raw: N bare readers of the same mock at the same pace, in the same "
            "run. Paced points count what arrived while every stream ran; full-speed points all deltas, first to "
            "last arrival. CPU: the daemon's cores over the point (all threads / its event loop) and per delta. "
            "Others: cores busy with other people's work meanwhile."
        ),
        "",
        "| threads | pace each | offered/s | delivered/s | delivered/offered | latency p50 / p99 | gaps | raw delivered/s | raw delivered/offered | raw latency p50 / p99 | daemon CPU cores (loop) | CPU µs/delta (loop) | others | load |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for p in sweep:
        pace = f"{1000 / p['delay_ms']:g}/s" if p["delay_ms"] else "full speed"
        raw, cpu, machine = p["raw"], p["cpu"], p.get("machine", {})
        offered = f"{p['offered_deltas_per_s']:,}" if p["offered_deltas_per_s"] else "-"
        lines.append(
            f"| {p['threads']:,} | {pace} | {offered} | {p['deltas_per_s']:,} | {_share(p['delivered_share'])} "
            f"| {_ms(p['latency'])} | {p['gaps']} | {raw['deltas_per_s']:,} | {_share(raw['delivered_share'])} | {_ms(raw['latency'])} "
            f"| {cpu['cores']} ({cpu['loop_cores']}) | {cpu['us_per_delta']} ({cpu['loop_us_per_delta']}) "
            f"| {machine.get('others_cores', '?')} | {machine.get('load_1min', '?')} |"
        )
    return lines


def markdown(doc: dict[str, Any], plotted: bool = True) -> str:
    machine = doc["machine"]
    lines = [
        "# echsd quick benchmark (`make bench-quick`)",
        "",
        (
            f"{machine['when']}; {machine['cpus']} cores, load {machine['load_1min_before']} before and "
            f"{machine['load_1min_after']} after; other work kept {machine['others_cores_mean']} cores busy on average "
            f"(at most {machine['others_cores_max']} during one part); Python {machine['python']}; {machine['wall_s']} s in all."
        ),
        (
            "Each figure is measured beside its raw limit in the same run; the ratio is echsd / raw "
            "(throughput: share of the limit, higher is better; time and CPU: multiple of the floor, lower is better)."
        ),
        "",
        "| what | echsd | raw limit | raw | ratio | others, load |",
        "|---|---:|---|---:|---:|---:|",
    ]
    stage = doc.get("stage_machine", {})
    for fig in doc["figures"]:
        ratio = "n/a" if fig["ratio"] is None else f"{fig['ratio']:.2f}x"
        arrow = "↑" if fig["better"] == "higher" else "↓"
        busy = stage.get(fig["key"], {})
        lines.append(
            f"| {fig['what']} | {_number(fig['value'])} {fig['unit']} | {fig['raw']['what']} | {_number(fig['raw']['value'])} {fig['unit']} "
            f"| {ratio} {arrow} | {busy.get('others_cores', '?')}, {busy.get('load_1min', '?')} |"
        )
    sweep = doc.get("sweep") or []
    if sweep:
        lines += _sweep_lines(sweep)
        if plotted:
            lines += ["", f"![delta latency and throughput against streaming threads]({NAME}.png)"]
    return "\n".join(lines) + "\n"


def plot(doc: dict[str, Any], path: Path) -> bool:
    """Paced points: latency p50/p99 and delivered against offered, each beside the bare
    readers'; False without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    paced = [p for p in doc["sweep"] if p["delay_ms"]]
    full = [p for p in doc["sweep"] if not p["delay_ms"]]
    counts = [p["threads"] for p in paced]
    fig, (lat, thr) = plt.subplots(1, 2, figsize=(11, 4.2))
    for key, style in (("p50_ms", "o-"), ("p99_ms", "s-")):
        lat.plot(counts, [p["latency"][key] for p in paced], style, label=f"echsd {key[:3]}")
        lat.plot(counts, [p["raw"]["latency"][key] for p in paced], style.replace("-", ":"), color="grey", label=f"raw: bare readers {key[:3]}")
    lat.set(xscale="log", yscale="log", xlabel="streaming threads (paced)", ylabel="ms", title="delta latency: mock's write to client")
    lat.grid(True, which="both", alpha=0.3)
    lat.legend(fontsize="small")
    thr.plot(counts, [p["offered_deltas_per_s"] for p in paced], ":", color="grey", label="offered (paced)")
    thr.plot(counts, [p["raw"]["deltas_per_s"] for p in paced], "^--", color="grey", label="raw: bare readers (paced)")
    thr.plot(counts, [p["deltas_per_s"] for p in paced], "o-", label="echsd, to one client (paced)")
    for p in paced:
        thr.annotate(f"{1000 / p['delay_ms']:g}/s each", (p["threads"], p["deltas_per_s"]), textcoords="offset points", xytext=(4, -12), fontsize="x-small")
    if full:
        thr.plot([p["threads"] for p in full], [p["deltas_per_s"] for p in full], "D-", label="echsd at full speed")
        thr.plot([p["threads"] for p in full], [p["raw"]["deltas_per_s"] for p in full], "d--", color="black", label="raw at full speed")
    thr.set(xscale="log", yscale="log", xlabel="streaming threads", ylabel="deltas/s", title="delta throughput")
    thr.legend(fontsize="small")
    thr.grid(True, which="both", alpha=0.3)
    machine = doc["machine"]
    fig.suptitle(f"echsd bench-quick, {machine['when']}, {machine['cpus']} cores, others busy {machine['others_cores_mean']} cores", fontsize="medium")
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
