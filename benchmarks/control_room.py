"""Room for the studies' controls on the zoo models, side by side (tutorial_lib.studies.room; issue 49's targets).

    python benchmarks/control_room.py zoo-multitask-medium zoo-multitask-deep

Prints each model's figures, and the targets it misses; --json writes them (docs/zoo.md quotes the table).
"""
from __future__ import annotations

import argparse
import json
import time

import torch


def main() -> None:
    from tutorial_lib import load_model
    from tutorial_lib.studies.room import TARGETS, control_room, missed

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    torch.set_num_threads(1)
    out = {}
    for name in args.models:
        t = time.perf_counter()
        room = control_room(load_model(name, verbose=False))
        room["seconds"] = round(time.perf_counter() - t, 1)
        out[name] = {"room": room, "missed": {k: [v, list(b)] for k, (v, b) in missed(room).items()}}
        print(f"{name} ({room['seconds']} s):")
        for k in TARGETS:
            op, bar = TARGETS[k]
            v = room[k]
            print(f"  {k:34s} {v if not isinstance(v, float) else round(v, 3)!s:>8}  target {op} {bar}"
                  + ("   MISSED" if k in out[name]["missed"] else ""))
        for k in ("01.circuit", "02.setting", "02.sp", "03.induction_heads", "03.layer_matched_draws"):
            print(f"  {k}: {room[k]}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1, default=str)


if __name__ == "__main__":
    main()
