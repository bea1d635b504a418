"""Rewrite the README's notebook-figure blocks from a run of the notebooks, never by hand.

    python scripts/readme_figures.py            # execute notebooks 02 and 03 (solutions), then rewrite the blocks
    python scripts/readme_figures.py --from DIR # rewrite them from figures an earlier run recorded in DIR

The notebooks record what the README quotes with tutorial_lib.course.record.record (into TUTORIAL_RECORD); the
README's test command records them too, and tests/test_readme_figures.py fails when a block drifts from the run.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = {"02": "notebooks/solutions/02_consistency_specificity.ipynb",
             "03": "notebooks/solutions/03_spectral_recipe.ipynb"}


def run(folder: Path) -> None:
    env = {**os.environ, "TUTORIAL_RECORD": str(folder)}
    for nb, path in NOTEBOOKS.items():
        print(f"[readme_figures] executing {path}", flush=True)
        subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute", "--stdout",
                        "--ExecutePreprocessor.timeout=1800", str(ROOT / path)], env=env, check=True,
                       stdout=subprocess.DEVNULL)


def main() -> None:
    from tutorial_lib.course.record import update_readme

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--from", dest="source", type=Path, help="a folder of recorded figures (NN.json)")
    args = ap.parse_args()
    folder = args.source or Path(tempfile.mkdtemp(prefix="readme-figures-"))
    if args.source is None:
        run(folder)
    readme = (ROOT / "README.md").read_text()
    for nb in NOTEBOOKS:
        path = folder / f"{nb}.json"
        if not path.exists():
            sys.exit(f"no figures recorded for notebook {nb} in {folder}")
        readme = update_readme(readme, nb, json.loads(path.read_text()))
    (ROOT / "README.md").write_text(readme)
    print(f"[readme_figures] README blocks rewritten from {folder}")


if __name__ == "__main__":
    main()
