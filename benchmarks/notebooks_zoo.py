"""Time every cell of every solution notebook on the offline default (the zoo model), as a learner runs them.

The notebooks load the offline default (``TUTORIAL_MODEL`` unset, the hub unreachable) at their own default sizes
(``TUTORIAL_SIZE=auto``: the sizes a laptop CPU gets) unless ``--size`` says otherwise. Notebook 03 trains its small
models on a first run and caches them: ``--cold`` empties that cache first (a fresh folder for the run), otherwise
the figures are those of a learner's second run.

    python benchmarks/notebooks_zoo.py                  # all six notebooks
    python benchmarks/notebooks_zoo.py 01 04 --threads 2

Prints each notebook's total, every cell over 20 s (the README's course table lists those), and writes the figures
as JSON to ``build/notebooks_zoo.json``. The limit the course sets itself: every notebook in at most 2 minutes on a
quiet 2-core machine, notebook 03 after its training cache is filled.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from notebook_run import run_notebook  # noqa: E402

LIMIT_S = 120  # every offline notebook, on a quiet 2-core machine (03 once its training cache is filled)
SLOW_CELL_S = 20  # cells the README's course table names


def zoo_env(threads: int | None, size: str, cache: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("TUTORIAL_MODEL", "HF_ENDPOINT", "TUTORIAL_RECORD")}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TUTORIAL_SIZE=size, TUTORIAL_CLAIMS="report",
               PYTHONWARNINGS="ignore::DeprecationWarning", MPLBACKEND="Agg")
    if threads:
        env["OMP_NUM_THREADS"] = str(threads)
    if cache:
        env["TUTORIAL_CACHE"] = cache
    return env


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("notebooks", nargs="*", help="notebook numbers (00 01 ...); default all")
    p.add_argument("--size", default="auto", choices=["auto", "full", "cpu", "quick"])
    p.add_argument("--threads", type=int, default=None, help="OMP_NUM_THREADS for the kernels (default: unset)")
    p.add_argument("--cold", action="store_true", help="notebook 03 trains from scratch (an empty training cache)")
    p.add_argument("--out", default=str(ROOT / "build" / "notebooks_zoo.json"))
    a = p.parse_args(argv)
    paths = sorted((ROOT / "notebooks" / "solutions").glob("0?_*.ipynb"))
    if a.notebooks:
        paths = [q for q in paths if q.name[:2] in a.notebooks]
    results = {}
    with tempfile.TemporaryDirectory() as cold:
        env = zoo_env(a.threads, a.size, cold if a.cold else None)
        for path in paths:
            run = run_notebook(path, env, timeout=1800)
            over = run.seconds > LIMIT_S
            print(f"\n{path.name}: {run.seconds:.0f} s in all{' (over the 2-minute limit)' if over else ''}", flush=True)
            for c in sorted(run.cells, key=lambda c: c.index):
                if c.seconds >= SLOW_CELL_S:
                    print(f"  cell {c.index:3d} {c.seconds:7.1f} s  {c.source}")
            if run.error:
                print(f"  FAILED: {run.error[-1500:]}")
            results[path.name] = {"seconds": round(run.seconds, 1), "error": run.error,
                                  "slow_cells": [{"index": c.index, "seconds": round(c.seconds, 1), "source": c.source}
                                                 for c in sorted(run.cells, key=lambda c: c.index)
                                                 if c.seconds >= SLOW_CELL_S]}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps({"size": a.size, "threads": a.threads, "cold": a.cold, "cpus": os.cpu_count(),
                                       "limit_s": LIMIT_S, "notebooks": results}, indent=1))
    print(f"\nwritten {a.out}")
    return 1 if any(r["error"] for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
