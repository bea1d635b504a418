"""Rewrite the documentation's figure blocks from a run of the notebooks, never by hand.

    python scripts/readme_figures.py            # execute notebooks 02 and 03 (solutions), then rewrite the blocks
    python scripts/readme_figures.py --from DIR # rewrite them from what an earlier run recorded in DIR

The blocks and where they live (:data:`BLOCKS`): the README's course table with each notebook's measured time
(``times``), each notebook's claim outcomes on the offline default (``claims``), and notebook 02's and 03's figures
on the zoo page (``02``, ``03``). The notebooks record what the blocks
quote with tutorial_lib.course.record.record, and the README's test command records each notebook's wall time
(tests/conftest.py), both into TUTORIAL_RECORD (``build/figures`` there); tests/test_readme_figures.py fails when a
block drifts from the run. The course table's GPT-2 column comes from ``benchmarks/notebooks_gpt2.py``'s output at the
notebooks' CPU sizes (``--gpt2``).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = {"02": "notebooks/solutions/02_consistency_specificity.ipynb",
             "03": "notebooks/solutions/03_spectral_recipe.ipynb"}
#: each block, the file that holds it, and the file of the run's record it is written from
BLOCKS = {"times": ("README.md", "times.json"), "claims": ("README.md", "claims.json"), "02": ("docs/zoo.md", "02.json"),
          "03": ("docs/zoo.md", "03.json")}
GPT2_RUN = ROOT / "benchmarks" / "notebooks_gpt2_cpu.json"


def run(folder: Path) -> None:
    from tutorial_lib.course.record import record_time

    env = {**os.environ, "TUTORIAL_RECORD": str(folder)}
    os.environ["TUTORIAL_RECORD"] = str(folder)
    for nb, path in NOTEBOOKS.items():
        print(f"[readme_figures] executing {path}", flush=True)
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute", "--stdout",
                        "--ExecutePreprocessor.timeout=1800", str(ROOT / path)], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        if env.get("TUTORIAL_MODEL", "auto") == "auto":
            from tutorial_lib.zoo.loading import default_zoo_model

            record_time(nb, time.perf_counter() - t, "zoo", default_zoo_model())


def gpt2_times(path: Path) -> dict:
    """Each notebook's total from a ``benchmarks/notebooks_gpt2.py`` run at the notebooks' own sizes, else ``{}``."""
    if not path.exists():
        return {}
    data = json.loads(path.read_text())
    if data.get("size") != "auto":
        sys.exit(f"{path} was run at --size {data.get('size')}, not at the notebooks' own sizes (auto)")
    return {name[:2]: r["seconds"] for name, r in data["notebooks"].items() if not r.get("error")}


def main() -> None:
    from tutorial_lib.course.record import update_readme

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--from", dest="source", type=Path, help="a folder of recorded figures (NN.json, times.json)")
    ap.add_argument("--gpt2", type=Path, default=GPT2_RUN, help="benchmarks/notebooks_gpt2.py's output (default: "
                    "%(default)s)")
    args = ap.parse_args()
    folder = args.source or Path(tempfile.mkdtemp(prefix="readme-figures-"))
    if args.source is None:
        run(folder)
    texts = {}
    for block, (doc, record) in BLOCKS.items():
        text = texts.setdefault(doc, (ROOT / doc).read_text())
        path = folder / record
        if block == "times":
            figures = json.loads(path.read_text()) if path.exists() else {}
            figures["gpt2"] = {**gpt2_times(args.gpt2), **figures.get("gpt2", {})}
        elif not path.exists():
            print(f"[readme_figures] no figures recorded for notebook {block} in {folder}: its block is left as it was")
            continue
        else:
            figures = json.loads(path.read_text())
            if block == "claims":  # the offline default's claims (the GPT-2-shaped run records its own too)
                from tutorial_lib.course.record import claims_for
                from tutorial_lib.zoo.loading import default_zoo_model

                figures = claims_for(figures, default_zoo_model())
        texts[doc] = update_readme(text, block, figures)
    for doc, text in texts.items():
        (ROOT / doc).write_text(text)
    print(f"[readme_figures] blocks in {', '.join(texts)} rewritten from {folder}")


if __name__ == "__main__":
    main()
