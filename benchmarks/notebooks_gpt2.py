"""Time every cell of every notebook on a GPT-2-small-shaped model served by a local hub.

The model has GPT-2 small's shape and real tokenizer and random weights (tests/local_hub.py); the
notebooks load it exactly as a learner's would (``TUTORIAL_MODEL=gpt2`` through ``HF_ENDPOINT``), at their
own default sizes (``TUTORIAL_SIZE=auto``: the CPU sizes on this machine) unless ``--size`` says otherwise.
Claims that random weights do not meet are reported, not failures (``TUTORIAL_CLAIMS=report``).
Notebook 01 runs with the paper's circuit planted in its path-patching search (tests/planted_gpt2.py):
random weights find an empty circuit, and a search that traces nothing would look far cheaper than it is
on real GPT-2.

    python benchmarks/notebooks_gpt2.py                 # all four notebooks, default sizes
    python benchmarks/notebooks_gpt2.py 01 --size quick # one notebook, the CI's sizes

Prints one line per cell over 5 s, each notebook's total and its slowest cell, and writes the figures as
JSON to ``build/notebooks_gpt2.json``.
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

from local_hub import GPT2_REPO, LocalHub  # noqa: E402
from notebook_run import run_notebook  # noqa: E402
from planted_gpt2 import PRELUDE  # noqa: E402


def hub_env(endpoint: str, hf_home: str, size: str, threads: int | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    env.update(HF_ENDPOINT=endpoint, HF_HOME=hf_home, TUTORIAL_MODEL="gpt2", TUTORIAL_CLAIMS="report",
               TUTORIAL_SIZE=size, PYTHONWARNINGS="ignore::DeprecationWarning", MPLBACKEND="Agg")
    if threads:
        env["OMP_NUM_THREADS"] = str(threads)
    return env


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("notebooks", nargs="*", help="notebook numbers (00 01 ...); default all")
    p.add_argument("--size", default="auto", choices=["auto", "full", "cpu", "quick"])
    p.add_argument("--out", default=str(ROOT / "build" / "notebooks_gpt2.json"))
    a = p.parse_args(argv)
    paths = sorted((ROOT / "notebooks" / "solutions").glob("*.ipynb"))
    if a.notebooks:
        paths = [q for q in paths if q.name[:2] in a.notebooks]
    results = {}
    with LocalHub() as hub, tempfile.TemporaryDirectory() as hf_home:
        t = time.time()
        hub.prepare((GPT2_REPO, "main"))
        print(f"local hub at {hub.endpoint} (GPT-2-shaped repo ready in {time.time() - t:.0f} s)", flush=True)
        for path in paths:
            run = run_notebook(path, hub_env(hub.endpoint, hf_home, a.size), timeout=1800,
                               prelude=PRELUDE if path.name.startswith("01") else None)
            slow = run.slowest(1)[0] if run.cells else None
            print(f"\n{path.name}: {run.seconds:.0f} s in all; slowest cell {slow.seconds:.0f} s ({slow.source!r})"
                  if slow else f"\n{path.name}: no cell ran", flush=True)
            for c in sorted(run.cells, key=lambda c: c.index):
                if c.seconds >= 5:
                    print(f"  cell {c.index:3d} {c.seconds:7.1f} s  {c.source}")
            if run.claims_not_met:
                print(f"  claims not met (random weights): {len(run.claims_not_met)}")
            if run.error:
                print(f"  FAILED: {run.error[-1500:]}")
            results[path.name] = {"seconds": round(run.seconds, 1), "error": run.error,
                                  "claims_not_met": run.claims_not_met,
                                  "cells": [{"index": c.index, "seconds": round(c.seconds, 2), "source": c.source}
                                            for c in run.cells]}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps({"size": a.size, "threads": os.cpu_count(), "notebooks": results}, indent=1))
    print(f"\nwritten {a.out}")
    return 1 if any(r["error"] for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
