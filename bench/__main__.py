"""Run every ``bench/bench_*.py`` (or those named on the command line) and print their reports.

Each benchmark module has ``main(argv: list[str]) -> dict`` returning its measurements;
results are also written to ``bench/results/<name>.json`` for comparison across runs.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import sys
import time
from pathlib import Path


def main() -> int:
    wanted = [a for a in sys.argv[1:] if not a.startswith("-")]
    here = Path(__file__).parent
    names = sorted(m.name for m in pkgutil.iter_modules([str(here)]) if m.name.startswith("bench_"))
    if wanted:
        names = [n for n in names if any(w in n for w in wanted)]
    results_dir = here / "results"
    results_dir.mkdir(exist_ok=True)
    for name in names:
        module = importlib.import_module(f"bench.{name}")
        started = time.perf_counter()
        result = module.main([a for a in sys.argv[1:] if a.startswith("-")])
        result["wall_s"] = round(time.perf_counter() - started, 2)
        (results_dir / f"{name}.json").write_text(json.dumps(result, indent=2))
        sys.stdout.write(f"== {name}\n{json.dumps(result, indent=2)}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
