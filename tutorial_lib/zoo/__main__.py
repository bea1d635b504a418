"""``python -m tutorial_lib.zoo build`` rebuilds the shipped zoo models; ``list`` shows them."""
from __future__ import annotations

import argparse
import json


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tutorial_lib.zoo", description=__doc__)
    sub = parser.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="train and save the zoo models into data/zoo")
    b.add_argument("--only", default=None, help="build only this model name")
    b.add_argument("--steps", type=int, default=None, help="override the multi-task model's training steps (development)")
    b.add_argument("--resume", action="store_true",
                   help="continue a stopped multi-task build from its saved training state (.zoo-build/NAME)")
    b.add_argument("--directory", default=None, help="save into this folder instead of data/zoo (trying candidates)")
    b.add_argument("--work-dir", default=None,
                   help="keep each build's training state in WORK_DIR/NAME instead of .zoo-build/NAME (a build that "
                        "spans sessions keeps it where it is versioned: see docs/zoo.md)")
    b.add_argument("--threads", type=int, default=1,
                   help="torch threads for the multi-task model (default 1: reproduces the shipped weights bit for bit; "
                        "2 is ~10%% faster on a quiet 2-core machine, with different rounding)")
    c = sub.add_parser("compact-state", help="keep a build's resume states (DIR/**/train_state.pt) with their "
                                             "checkpoints as they ship (float16): what a build spanning sessions commits")
    c.add_argument("dir")
    sub.add_parser("list", help="list the zoo models and their measured metrics")
    sub.add_parser("placeholder", help="save the untrained placeholder model")
    args = parser.parse_args(argv)
    if args.cmd == "list":
        from .store import read_manifest

        for name, entry in read_manifest()["models"].items():
            print(f"{name}: {entry.get('description', '')}\n  metrics: {json.dumps(entry.get('metrics', {}))}")
        return 0
    if args.cmd == "compact-state":
        from pathlib import Path

        from .build import compact_state

        for path in sorted(Path(args.dir).rglob("train_state.pt")):
            before, after = compact_state(path)
            print(f"{path}: {before / 1e6:.1f} MB -> {after / 1e6:.1f} MB")
        return 0
    if args.cmd == "placeholder":
        from .placeholder import build_placeholder

        build_placeholder()
        return 0
    from .build import build_all

    if args.threads < 1:
        parser.error(f"--threads must be >= 1, got {args.threads}")
    build_all(only=args.only, steps=args.steps, threads=args.threads, resume=args.resume, directory=args.directory,
              work_dir=args.work_dir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
