"""Issue 30's restart pilots (see tutorial_lib/zoo/PILOTS.rst): the library build's first-cycle state (K2f6's recipe,
step 6,500, in /work/build), then a restart with m0 frozen and head dropout, through build_multitask.
Resumable: run again to continue.  python issue30_pilot_candidate.py NAME [STEPS [P [SEED]]]"""
import json, shutil, sys
from pathlib import Path

from tutorial_lib.zoo.build import build_multitask
from tutorial_lib.zoo.multitask import MixSpec

BUILD = Path("/work/build")  # the worktree whose library build wrote the first cycle's state and manifest


def run_restart(name: str, steps: int = 10000, p: float = 0.1, seed: int = 1, note: str = "", rows=None):
    root = Path("/work/var") / name
    entry = json.loads((BUILD / "data/zoo/manifest.json").read_text())["models"]["zoo-multitask-medium"]
    if not (root / "zoo").exists():
        shutil.copytree(BUILD / "data/zoo", root / "zoo")
        (root / "work").mkdir(parents=True, exist_ok=True)
        shutil.copy(BUILD / ".zoo-build/zoo-multitask-medium/train_state.pt", root / "work" / "train_state.pt")
    train = dict(entry["train"])
    train["restart"] = {**train["restart"], "frozen": ["embed.", "unembed.", "blocks.0.mlp."], "steps": steps,
                        "seed": seed, "head_dropout": {"p": p, "seed": 4321, **({"rows": rows} if rows else {})}}
    mix = {k: (tuple(tuple(x) if isinstance(x, list) else x for x in v) if isinstance(v, list) else v)
           for k, v in entry["mix"].items()}
    print("train:", train, note, flush=True)
    return build_multitask(name="zoo-multitask-medium", train=train, spec=MixSpec(**mix), config=None,
                           directory=root / "zoo", work_dir=root / "work", resume=True, num_threads=1, progress=True)


if __name__ == "__main__":
    run_restart(*(kind(x) for kind, x in zip((str, int, float, int), sys.argv[1:])))
