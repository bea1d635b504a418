"""Benchmark: the batched path-patching engine against one hooked forward per sender.

On a GPT-2-small-shaped model with random weights (12 layers, d_model 768, 12 heads, d_mlp 3072,
d_vocab 50257), 32 prompts of 13 random tokens, every head and MLP (156 senders) is path-patched at
the END position into (i) the logits and (ii) the input of MLP 9, once with
``tutorial_lib.methods.path_patching.path_patch_sweep`` and once with a plain reference that runs the whole
hooked model once per sender (everything not on the path frozen by hooks, the sender's delta added
to the receiver's input). Both run in this process, on ``TORCH_THREADS`` threads (default 2).

    python benchmarks/path_patching.py            # the full benchmark (a few minutes on 2 threads)
    python benchmarks/path_patching.py --quick    # 24 senders, 8 prompts: a smoke test

The last line is ``RESULT path_patching speedup=<x> max_abs_diff=<y>``.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import warnings
from pathlib import Path

warnings.filterwarnings("ignore", category=DeprecationWarning)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
from transformer_lens import HookedTransformer, HookedTransformerConfig  # noqa: E402

from tutorial_lib.core.components import parse  # noqa: E402
from tutorial_lib.methods.path_patching import path_patch_sweep  # noqa: E402


def build(n_prompts: int, seq: int, seed: int = 0, weight_scale: float = 1.0):
    cfg = HookedTransformerConfig(n_layers=12, d_model=768, n_heads=12, d_head=64, d_mlp=3072, d_vocab=50257,
                                  n_ctx=1024, act_fn="gelu_new", normalization_type="LN", seed=seed, device="cpu")
    model = HookedTransformer(cfg).eval()
    with torch.no_grad():  # the default init gives tiny effects; larger weights make the comparison telling
        for p in model.parameters():
            p.mul_(weight_scale)
    g = torch.Generator().manual_seed(seed)
    clean = torch.randint(0, cfg.d_vocab, (n_prompts, seq), generator=g)
    corrupt = clean.clone()
    yy_pos = seq - 6
    corrupt[:, yy_pos] = torch.randint(0, cfg.d_vocab, (n_prompts,), generator=g)  # the "01" swap
    years = torch.randperm(cfg.d_vocab, generator=g)[:100]  # stand-ins for the tokens "00".."99"
    yy = torch.randint(2, 98, (n_prompts,), generator=g)
    end = torch.full((n_prompts,), seq - 1)

    def metric(logits):  # mean logit of years > YY minus years <= YY, at END (a logit-scale prob. difference)
        final = logits[torch.arange(logits.shape[0]), end][:, years]
        up = torch.arange(100)[None, :] > yy[:, None]
        return (final * up).sum(1) / up.sum(1) - (final * ~up).sum(1) / (~up).sum(1)

    return model, clean, corrupt, end, metric


def reference_sweep(model, clean, corrupt, senders, receiver, metric, end):
    """One hooked forward per sender; returns {sender: metric per example}.

    Heads are frozen through ``hook_z`` (``use_attn_result`` would materialise a
    [batch, pos, head, d_head, d_model] tensor per layer, ~1 GB here, and time that instead).
    """
    model.set_use_hook_mlp_in(True)
    try:
        with torch.no_grad():
            _, bc = model.run_with_cache(clean)
            _, nc = model.run_with_cache(corrupt)
        n = model.cfg.n_layers
        B, P = clean.shape
        mask = torch.zeros(B, P, 1)
        mask[torch.arange(B), end] = 1.0
        recv = parse(receiver)
        last = float("inf") if recv.kind == "logits" else recv.layer + 0.5
        freeze = []
        for l in range(n):
            if l <= last:  # every head up to the receiver keeps its baseline output
                freeze.append((f"blocks.{l}.attn.hook_z", lambda a, hook, l=l: bc[f"blocks.{l}.attn.hook_z"]))
            if l + 0.5 < last:  # and every MLP before it
                freeze.append((f"blocks.{l}.hook_mlp_out", lambda a, hook, l=l: bc[f"blocks.{l}.hook_mlp_out"]))
        target = f"blocks.{n - 1}.hook_resid_post" if recv.kind == "logits" else f"blocks.{recv.layer}.hook_mlp_in"
        out = {}
        for name in senders:
            s = parse(name)
            if s.order >= last:
                delta = torch.zeros_like(bc["blocks.0.hook_resid_pre"])
            elif s.kind == "mlp":
                delta = nc[f"blocks.{s.layer}.hook_mlp_out"] - bc[f"blocks.{s.layer}.hook_mlp_out"]
            else:
                key = f"blocks.{s.layer}.attn.hook_z"
                delta = (nc[key][:, :, s.head] - bc[key][:, :, s.head]) @ model.blocks[s.layer].attn.W_O[s.head]
            delta = delta * mask
            hooks = freeze + [(target, lambda a, hook, d=delta: a + d)]
            with torch.no_grad(), model.hooks(fwd_hooks=hooks):
                out[name] = metric(model(clean))
        return out
    finally:
        model.set_use_hook_mlp_in(False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="8 prompts and 24 senders: a smoke test")
    ap.add_argument("--prompts", type=int, default=32)
    ap.add_argument("--seq", type=int, default=13)
    ap.add_argument("--weight-scale", type=float, default=2.0,
                    help="multiply every random weight by this, so that path effects are well above float noise")
    args = ap.parse_args()
    threads = int(os.environ.get("TORCH_THREADS", "2"))
    torch.set_num_threads(threads)
    n_prompts = 8 if args.quick else args.prompts
    t0 = time.perf_counter()
    model, clean, corrupt, end, metric = build(n_prompts, args.seq, weight_scale=args.weight_scale)
    print(f"model built in {time.perf_counter() - t0:.1f} s (weights x{args.weight_scale}); "
          f"{n_prompts} prompts x {args.seq} tokens; "
          f"{threads} threads; {platform.processor() or platform.machine()}, torch {torch.__version__}")
    senders = [f"a{l}.h{h}" for l in range(12) for h in range(12)] + [f"m{l}" for l in range(12)]
    senders.sort(key=lambda n: parse(n).order)
    if args.quick:
        senders = senders[::7][:24]
    rows, max_diff, tot = [], 0.0, {"fast": [0.0, 0.0], "ref": [0.0, 0.0]}  # [wall, cpu]

    def timed(fn):
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        return out, time.perf_counter() - w, time.process_time() - c

    for receiver in ["logits", "m9"]:
        res, fw, fc = timed(lambda: path_patch_sweep(model, clean, corrupt, receiver, metric, senders=senders,
                                                     sender_positions=end, logit_positions=end, progress=False))
        ref, rw, rc = timed(lambda: reference_sweep(model, clean, corrupt, senders, receiver, metric, end))
        diff = max(float((res.per_example[s] - ref[s]).abs().max()) for s in senders)
        eff = max(abs(v) for v in res.effects.values())
        rows.append((receiver, len(senders), fw, rw, rw / fw, fc, rc, rc / fc, diff, eff))
        max_diff = max(max_diff, diff)
        for k, (w, c) in (("fast", (fw, fc)), ("ref", (rw, rc))):
            tot[k][0] += w
            tot[k][1] += c
    print(f"\n{'receiver':>9} {'senders':>7} {'fast wall s':>11} {'ref wall s':>10} {'speedup':>8} "
          f"{'fast CPU s':>10} {'ref CPU s':>9} {'speedup':>8} {'max |diff|':>10} {'max |effect|':>12}")
    for r in rows:
        print(f"{r[0]:>9} {r[1]:>7} {r[2]:>11.2f} {r[3]:>10.2f} {r[4]:>7.1f}x {r[5]:>10.2f} {r[6]:>9.2f} "
              f"{r[7]:>7.1f}x {r[8]:>10.2e} {r[9]:>12.3g}")
    (fw, fc), (rw, rc) = tot["fast"], tot["ref"]
    print(f"{'total':>9} {'':>7} {fw:>11.2f} {rw:>10.2f} {rw / fw:>7.1f}x {fc:>10.2f} {rc:>9.2f} {rc / fc:>7.1f}x")
    print(f"fast seconds per sweep (mean of the two): wall {fw / 2:.2f}, CPU {fc / 2:.2f}")
    if not args.quick:  # the later discovery steps read YY: more positions to recompute (fast method only)
        yy_pos = torch.full_like(end, args.seq - 6)
        heads = ["a9.h1", "a8.h11", "a7.h10", "a6.h9", "a5.h5", "a8.h8", "a5.h1"]
        for label, recv in [("q of 7 heads", [f"{h}.q" for h in heads]), ("m0", "m0")]:
            _, w, c = timed(lambda: path_patch_sweep(model, clean, corrupt, recv, metric, senders=senders,
                                                     sender_positions=yy_pos, logit_positions=end, progress=False))
            print(f"fast sweep, senders at YY -> {label}: wall {w:.2f} s, CPU {c:.2f} s")
    print(f"RESULT path_patching speedup={rw / fw:.1f} max_abs_diff={max_diff:.2e}")


if __name__ == "__main__":
    main()
