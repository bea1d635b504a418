"""Per-example EAP: the batched method of tutorial_lib.methods.attribution vs the batch-size-1 loop of public code.

Model: GPT-2-small shape with random weights (12 layers, d_model 768, 12 heads, d_mlp 3072,
d_vocab 50257). Task: random prompts of ``--pos`` tokens (one token corrupted), answer = a random token,
metric = log p(answer) at the last position (Li & Subramani's metric).

The baseline follows the structure of the public per-example code (Bluefin-Tuna/memorization-circuits,
``circuit_reuse/eap.py``, adapted from Syed et al.'s EAP), with the receivers corrected to separate
q/k/v inputs: for each example, a corrupted forward (batch 1, full logits) whose hooks add sender
outputs into an activation-difference buffer, a clean forward with full logits and a backward pass
(the weights keep ``requires_grad=True`` as loaded, then ``model.zero_grad()``), backward hooks on each
receiver input computing ``einsum(diff[:, :, :n_upstream], grad)``.

If the whole loop would take too long, it runs on the first ``--slow-n`` examples and its time is
extrapolated linearly to all examples (printed as such). Scores of the two methods are compared on
those examples.

Run:  python benchmarks/eap_per_example.py [--n 256] [--batch-size 32] [--slow-n 16] [--threads 1]
Last line: ``RESULT eap_per_example speedup=<x> max_rel_diff=<y> peak_mb=<z>``.
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import time
import warnings

warnings.filterwarnings("ignore")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402
from transformer_lens import HookedTransformer, HookedTransformerConfig  # noqa: E402

from tutorial_lib.methods.attribution import EAPGraph, eap_scores  # noqa: E402
from tutorial_lib.core.device import get_device  # noqa: E402
from tutorial_lib.tasks.base import TaskData  # noqa: E402


def gpt2_small_random(device, seed=0) -> HookedTransformer:
    cfg = HookedTransformerConfig(
        n_layers=12, d_model=768, n_heads=12, d_head=64, d_mlp=3072, d_vocab=50257, n_ctx=1024,
        act_fn="gelu_new", normalization_type="LN", seed=seed, device=str(device),
    )
    return HookedTransformer(cfg)


def random_task(n, pos, vocab, seed=0) -> TaskData:
    g = torch.Generator().manual_seed(seed)
    clean = torch.randint(0, vocab, (n, pos), generator=g)
    corrupt = clean.clone()
    where = torch.randint(1, pos - 1, (n,), generator=g)
    shift = torch.randint(1, vocab, (n,), generator=g)
    corrupt[torch.arange(n), where] = (clean[torch.arange(n), where] + shift) % vocab
    return TaskData("random", [""] * n, [""] * n, clean, corrupt, end_pos=torch.full((n,), pos - 1),
                    answers=torch.randint(0, vocab, (n,), generator=g),
                    wrong=torch.randint(0, vocab, (n, 1), generator=g))


def public_style_loop(model, task, n):
    """Per-example EAP as the public code does it: batch size 1, three passes per example."""
    graph = EAPGraph.from_model(model)
    cfg, L, H = model.cfg, model.cfg.n_layers, model.cfg.n_heads
    S, R, p = len(graph.senders), len(graph.receivers), task.clean.shape[1]
    dev = model.W_E.device
    saved = (cfg.use_split_qkv_input, cfg.use_attn_result, cfg.use_hook_mlp_in)
    cfg.use_split_qkv_input = cfg.use_attn_result = cfg.use_hook_mlp_in = True
    diff = torch.zeros(1, p, S, cfg.d_model, device=dev)
    scores = torch.zeros(S, R, device=dev)

    def fwd(sign):
        def emb(act, hook):
            diff[:, :, 0] += sign * act.detach()

        def res(act, hook):
            s0 = graph.sender_base(hook.layer())
            diff[:, :, s0 : s0 + H] += sign * act.detach()

        def mlp(act, hook):
            diff[:, :, graph.sender_base(hook.layer()) + H] += sign * act.detach()

        return [("blocks.0.hook_resid_pre", emb), (lambda n_: n_.endswith("hook_result"), res),
                (lambda n_: n_.endswith("hook_mlp_out"), mlp)]

    def bwd(kind):
        def hook(grad, hook):
            grad = grad.detach()
            if kind == "logits":
                r0, n_up = R - 1, S
            else:
                r0 = graph.receiver_base(hook.layer()) + {"q": 0, "k": H, "v": 2 * H, "mlp": 3 * H}[kind]
                n_up = graph.n_upstream[r0]
            g = grad if grad.ndim == 4 else grad[:, :, None]
            s = torch.einsum("bpfd,bpkd->fk", diff[:, :, :n_up], g)
            scores[:n_up, r0 : r0 + g.shape[2]] += s

        return hook

    bwd_hooks = [(lambda n_, k=k: n_.endswith(f"hook_{k}_input"), bwd(k)) for k in "qkv"]
    bwd_hooks += [(lambda n_: n_.endswith("hook_mlp_in"), bwd("mlp")), (f"blocks.{L - 1}.hook_resid_post", bwd("logits"))]
    out = []
    try:
        for i in range(n):
            clean, corrupt = task.clean[i : i + 1].to(dev), task.corrupt[i : i + 1].to(dev)
            with torch.no_grad(), model.hooks(fwd_hooks=fwd(1.0)):
                model(corrupt)
            with model.hooks(fwd_hooks=fwd(-1.0), bwd_hooks=bwd_hooks):
                logits = model(clean)
                value = logits.log_softmax(-1)[0, task.end_pos[i], task.answers[i]]
                value.backward()
            model.zero_grad(set_to_none=True)
            out.append(scores.cpu().clone())
            scores.zero_()
            diff.zero_()
    finally:
        cfg.use_split_qkv_input, cfg.use_attn_result, cfg.use_hook_mlp_in = saved
    return torch.stack(out)


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--pos", type=int, default=16)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--slow-n", type=int, default=16, help="examples for the batch-1 loop (extrapolated)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--no-ablation-row", action="store_true", help="skip timing eap_scores at batch size 1")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    device = get_device()
    model = gpt2_small_random(device)
    task = random_task(args.n, args.pos, model.cfg.d_vocab)
    n_slow = min(args.slow_n, args.n)
    print(f"device={device} threads={torch.get_num_threads()} n={args.n} pos={args.pos} "
          f"batch_size={args.batch_size} torch={torch.__version__}")

    # warm-up (allocator, first-call overheads) of the batched method only, so that the peak RSS
    # read after it is the model plus the batched method; the loop is warmed up after that.
    eap_scores(model, task.subset(slice(0, 2)), batch_size=2, progress=False)

    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    sync(device)
    t0, c0 = time.perf_counter(), time.process_time()
    fast = eap_scores(model, task, batch_size=args.batch_size, progress=False)
    sync(device)
    t_fast, c_fast = time.perf_counter() - t0, time.process_time() - c0
    if device.type == "cuda":
        peak_mb, peak_how = torch.cuda.max_memory_allocated() / 2**20, "torch.cuda.max_memory_allocated"
    else:
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        peak_how = f"process peak RSS after the batched run, model included ({rss0:.0f} MB before it)"

    public_style_loop(model, task, 1)  # warm-up
    sync(device)
    t0, c0 = time.perf_counter(), time.process_time()
    slow = public_style_loop(model, task, n_slow)
    sync(device)
    t_slow = (time.perf_counter() - t0) * args.n / n_slow
    c_slow = (time.process_time() - c0) * args.n / n_slow

    t_b1 = c_b1 = None
    if not args.no_ablation_row:
        t0, c0 = time.perf_counter(), time.process_time()
        eap_scores(model, task.subset(slice(0, n_slow)), batch_size=1, progress=False)
        sync(device)
        t_b1 = (time.perf_counter() - t0) * args.n / n_slow
        c_b1 = (time.process_time() - c0) * args.n / n_slow

    ref, got = slow.double(), fast.edges[:n_slow].double()
    rel = max(float((got[i] - ref[i]).abs().max() / ref[i].abs().max()) for i in range(n_slow))
    same_top10 = float((fast.top_k(0.1)[:n_slow] == _top_k(ref, 0.1, fast)).all(1).float().mean())

    extra = "" if n_slow == args.n else f" (timed on {n_slow}, extrapolated x{args.n / n_slow:.1f})"
    print()
    print(f"| method | examples timed | wall s for {args.n} | CPU s for {args.n} | wall ms / example | speedup (wall) |")
    print("| --- | --- | --- | --- | --- | --- |")
    rows = [(f"public-style loop, batch 1{extra}", n_slow, t_slow, c_slow)]
    if t_b1 is not None:
        rows.append(("eap_scores, batch_size=1 (extrapolated likewise)", n_slow, t_b1, c_b1))
    rows.append((f"eap_scores, batch_size={args.batch_size}", args.n, t_fast, c_fast))
    for name, n_timed, wall, cpu in rows:
        print(f"| {name} | {n_timed} | {wall:.1f} | {cpu:.1f} | {1000 * wall / args.n:.1f} | {t_slow / wall:.2f}x |")
    print()
    print(f"max relative difference of edge scores (per example, max|diff|/max|ref|, first {n_slow}): {rel:.2e}")
    print(f"examples whose top-10% circuit is identical: {same_top10:.0%}")
    print(f"peak memory: {peak_mb:.0f} MB ({peak_how})")
    print(f"CPU-time speedup: {c_slow / c_fast:.2f}x (wall-clock and CPU time differ when other processes share the cores)")
    print(f"RESULT eap_per_example speedup={t_slow / t_fast:.2f} max_rel_diff={rel:.2e} peak_mb={peak_mb:.0f}")


def _top_k(edges, frac, like):
    nodes = edges.abs().sum(2)[:, 1:]
    k = like.k_for(frac)
    return torch.zeros_like(nodes, dtype=torch.bool).scatter_(1, nodes.topk(k, dim=1).indices, True)


if __name__ == "__main__":
    main()
