"""Issue 30's candidate for a medium zoo model whose copying heads are general (pilot H2's recipe, full build).

The shipped medium recipe (``tutorial_lib.zoo.build``: MEDIUM_MIX, MEDIUM_TRAIN, the restart) with three changes:

* induction rows repeat only the *trained* half of the ordinary tokens (``induction_vocab="split"``, seed 0), never
  the held-out half, and hold no held-out text (``induction_held_out_text=0``: held-out text taught pilot G that
  those tokens never repeat);
* the rows' vocabulary widens 256 -> 1,024 -> all 1,585 trained tokens at steps 0, 2,000 and 2,400;
* a frozen random code of norm 4 (seed 1234) in ``W_E`` and ``W_U`` while training
  (:mod:`tutorial_lib.zoo.shared_code`), folded into the saved weights.

It saves into ``--out`` (default ``.zoo-build/candidate/echo0``; git ignores it), never into ``data/zoo``; run it
again to resume a stopped build (its state is written every 250 steps). At the end it prints the held-out metrics and
the copying figures on trained and held-out tokens (32 repeated sequences of 24 tokens). One thread: ~0.6 s per
induction-only step here, about 1.6 h for the 9,500 steps. ``--echo N`` adds N echo rows per step (pilot H1).

    python scripts/zoo_general_candidate.py
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tutorial_lib.zoo import build  # noqa: E402
from tutorial_lib.zoo.copying import copying_on_tokens  # noqa: E402
from tutorial_lib.zoo.multitask import MixSpec  # noqa: E402
from tutorial_lib.zoo.split_induction import split_ids  # noqa: E402

MIX = {**build.MEDIUM_MIX, "induction_vocab": "split", "induction_held_out_text": 0.0,
       "induction_vocab_curriculum": ((0, 256), (2000, 1024), (2400, None))}
TRAIN = {**build.MEDIUM_TRAIN, "shared_code": {"scale": 4.0, "seed": 1234}}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--echo", type=int, default=0, help="echo rows per step (pilot H1); 0 in the candidate")
    ap.add_argument("--out", default=None, help="where to save and keep the training state")
    ap.add_argument("--restart-steps", type=int, default=None, help="the restarted cycle's length (default: the recipe's)")
    ap.add_argument("--restart-lr", type=float, default=None, help="the restarted cycle's peak lr (default: the recipe's)")
    ap.add_argument("--warmup-steps", type=int, default=None, help="induction-only steps before the tasks join "
                    "(default: the recipe's 2,500)")
    ap.add_argument("--warmup-heads", type=int, default=None, help="heads per layer at work in the induction-only "
                    "warm-up (pilot K; default: all)")
    ap.add_argument("--plain", type=int, default=0, help="plain rows per step in the mixed phase (pilot K2)")
    ap.add_argument("--plain-weight", type=float, default=0.25, help="their loss weight per position")
    ap.add_argument("--plain-from", type=int, default=0, help="the first step with plain rows (pilot K2b: 3,750)")
    ap.add_argument("--restart-plain", type=int, default=None, help="plain rows per step in the restart (default: as "
                    "in the first cycle)")
    ap.add_argument("--restart-plain-weight", type=float, default=None, help="their weight in the restart")
    ap.add_argument("--restart-rows", default=None, help="rows per step changed in the restart, e.g. "
                    "'addition=192,addition_small=96' (pilot RE)")
    ap.add_argument("--restart-frozen", default=None, help="parameter-name prefixes left untrained in the restart, "
                    "e.g. 'embed.,unembed.' (pilot K2f)")
    ap.add_argument("--full-softmax-mixed", action="store_true", help="the induction rows' softmax over every output "
                    "once the tasks join (pilot K3)")
    args = ap.parse_args(argv)
    mix = dict(MIX, echo_rows=args.echo)
    if args.full_softmax_mixed:
        mix["induction_closed_vocab_mixed"] = False
    if args.plain:
        mix.update(plain_rows=args.plain, plain_weight=args.plain_weight, plain_from=args.plain_from)
    if args.warmup_steps is not None:
        mix["induction_warmup_steps"] = args.warmup_steps
    train = dict(TRAIN, restart=dict(TRAIN["restart"]))
    if args.restart_steps:
        train["restart"]["steps"] = args.restart_steps
    if args.warmup_heads:
        train["warmup_heads"] = args.warmup_heads
    overrides = {k: v for k, v in (("plain_rows", args.restart_plain), ("plain_weight", args.restart_plain_weight))
                 if v is not None}
    if args.restart_rows:
        change = {k: int(v) for k, v in (kv.split("=") for kv in args.restart_rows.split(","))}
        overrides["rows"] = {**mix["rows"], **change}
    train["restart"]["mix"] = overrides  # the restart's mix: the first cycle's, changed only by these flags
    if args.restart_frozen:
        train["restart"]["frozen"] = args.restart_frozen.split(",")
    if args.restart_lr:
        train["restart"]["lr"] = args.restart_lr
    out = args.out or os.path.join(".zoo-build", "candidate", f"echo{args.echo}")
    state = os.path.join(out, ".zoo-build", build.MEDIUM_NAME, "train_state.pt")
    model, metrics, _ = build.build_multitask(name=build.MEDIUM_NAME, spec=MixSpec(**mix),
                                              train=train, directory=out, resume=os.path.exists(state),
                                              progress=False, save_every=250)
    held, trained = split_ids(model.tokenizer, 0, 0.5)
    for name, ids in (("trained", trained), ("held out", held)):
        c = copying_on_tokens(model, ids, n_seqs=32, length=24, label=name)
        print(f"[candidate] {name}: {c.first_loss:.2f} -> {c.second_loss:.2f} nats, {len(c.heads)} heads >= 0.3 "
              f"(best {float(c.scores.max()):.2f}), top-1 {100 * c.top1:.0f}%", flush=True)


if __name__ == "__main__":
    main()
