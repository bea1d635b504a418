"""Issue 30's next candidate (see tutorial_lib/zoo/PILOTS.rst): K2f6's first cycle (resumed from the library build's
state), then a 10,000-step restart with m0 frozen and head dropout 0.1. Resumable: run again to continue."""
import json, shutil
from pathlib import Path
from tutorial_lib.zoo.build import build_multitask
from tutorial_lib.zoo.multitask import MixSpec
import sys
name = sys.argv[1] if len(sys.argv) > 1 else "next"
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 10000
root = Path("/work/var") / name
entry = json.loads(Path("/work/build/data/zoo/manifest.json").read_text())["models"]["zoo-multitask-medium"]
if not (root / "zoo").exists():
    shutil.copytree("/work/build/data/zoo", root / "zoo")
    (root / "work").mkdir(parents=True, exist_ok=True)
    shutil.copy("/work/build/.zoo-build/zoo-multitask-medium/train_state.pt", root / "work" / "train_state.pt")
train = dict(entry["train"])
train["restart"] = {**train["restart"], "frozen": ["embed.", "unembed.", "blocks.0.mlp."], "steps": steps,
                    "head_dropout": {"p": float(sys.argv[3]) if len(sys.argv) > 3 else 0.1, "seed": 4321}}
mix = {k: (tuple(tuple(x) if isinstance(x, list) else x for x in v) if isinstance(v, list) else v) for k, v in entry["mix"].items()}
print("train:", train, flush=True)
build_multitask(name="zoo-multitask-medium", train=train, spec=MixSpec(**mix), config=None,
                directory=root / "zoo", work_dir=root / "work", resume=True, num_threads=1, progress=True)
