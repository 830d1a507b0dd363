"""``python -m bench.soak --duration 30m`` (``make soak DURATION=30m``): see ``bench/soak/__init__.py``."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

import trio

from bench.soak import summary
from bench.soak.run import soak_run
from bench.soak.state import Options, Soak
from bench.soak.watchers import Follower
from echsd import logs

RESULTS = Path(__file__).resolve().parents[1] / "results"
UNITS = {"s": 1, "m": 60, "h": 3600}


def duration(text: str) -> float:
    """``90``, ``90s``, ``30m`` or ``1h`` in seconds."""
    unit = UNITS.get(text[-1:], None)
    return float(text[:-1]) * unit if unit else float(text)


def parse(argv: list[str]) -> tuple[Options, Path]:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description="Mixed traffic against a real echsd serve on the mock model.")
    parser.add_argument("--duration", type=duration, default=1800.0, help="how long the traffic runs: 90s, 30m, 1h (default 30m)")
    parser.add_argument("--threads", type=int, default=100, help="driven threads (default 100)")
    parser.add_argument(
        "--restart-every", type=duration, default=240.0, help="mean time between daemon restarts (default 240s; a third are SIGKILL)"
    )
    parser.add_argument("--sample-every", type=duration, default=5.0, help="sampling period (default 5s)")
    parser.add_argument(
        "--think",
        type=float,
        nargs=2,
        default=(1.0, 5.0),
        metavar=("MIN", "MAX"),
        help="seconds a driver waits between actions (default 1 5)",
    )
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--out", type=Path, default=None, help="where samples and the summary go (default bench/results/soak-<time>)")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else int(time.time())
    out = args.out or RESULTS / time.strftime("soak-%Y%m%d-%H%M%S")
    options = Options(args.duration, args.threads, args.restart_every, args.sample_every, tuple(args.think), seed)
    return options, out


def main(argv: list[str]) -> int:
    options, out = parse(argv)
    out.mkdir(parents=True, exist_ok=False)
    logs.configure(level="warning")  # the final store check runs in this process
    soak = Soak(options, out)
    sys.stderr.write(f"soak: {options.duration_s:.0f} s, {options.threads} threads, seed {options.seed}, writing to {out}\n")
    started = time.monotonic()
    end, watchers = trio.run(soak_run, soak)
    result = {
        "duration_s": round(time.monotonic() - started, 1),
        "threads": options.threads,
        "seed": options.seed,
        "containment": soak.containment,
        "resources": summary.summarise(summary.load(out / "samples.jsonl")),
        "end": end,
        "actions": dict(soak.actions),
        "errors": dict(soak.errors),
        "error_samples": soak.error_samples,
        "restarts": soak.restarts,
        "sample_every_s": options.sample_every_s,
        "latency": soak.latency.overall(),
        "watchers": [{"kind": type(w).__name__, **{k: v for k, v in vars(w).items() if isinstance(v, int)}} for w in watchers],
        "followed_events": sum(w.events for w in watchers if isinstance(w, Follower)),
        "followed_gaps": sum(w.gaps for w in watchers if isinstance(w, Follower)),
        "follower_resumes": sum(w.resumes for w in watchers if isinstance(w, Follower)),
        "violations": soak.violations,
        "violation_kinds": dict(Counter(v["kind"] for v in soak.violations)),
    }
    (out / "summary.json").write_text(json.dumps(result, indent=2) + "\n")
    sys.stdout.write(summary.text(result) + f"\n  details: {out / 'summary.json'}\n")
    return 1 if soak.violations else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
