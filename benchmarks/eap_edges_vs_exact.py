"""How far EAP's edge scores are from exact edge patching, by family (issue 28: sandwich and post norms).

For every edge ``e`` of a tiny random model of each family, the exact effect of cutting that edge alone (the
circuit "every edge but e", whose receiver sees the sender's corrupted value: ``m(all but e) - m(full)``,
:func:`tutorial_lib.methods.faithfulness.patched_metric`) is set beside EAP's first-order score of the same edge
(mean over the examples). On a pre-norm model EAP's only approximation is the gradient; where a norm sits on the
attention's summed output (Gemma 2's ``ln1_post``, OLMo-2's ``ln1``) a head's change also goes through that norm
(``N(A + Δ_h) - N(A)``), and its scale is shared by the layer's heads. The table is descriptive: no tolerance.

    python benchmarks/eap_edges_vs_exact.py [--families llama gemma2 olmo2] [--n 8] [--scale 1.0]
"""
from __future__ import annotations

import argparse
import time

import torch

from tutorial_lib.methods.attribution import eap_scores
from tutorial_lib.methods.faithfulness import patched_metric
from tutorial_lib.tasks.base import TaskData
from tutorial_lib.zoo.families import tiny_family_model


def task_for(n: int, pos: int = 11, vocab: int = 61, seed: int = 0) -> TaskData:
    g = torch.Generator().manual_seed(seed)
    clean = torch.randint(1, vocab, (n, pos), generator=g)
    corrupt = clean.clone()
    corrupt[:, [3, 8]] = (clean[:, [3, 8]] + torch.randint(1, vocab - 1, (n, 2), generator=g)) % vocab
    return TaskData("bench", [""] * n, [""] * n, clean, corrupt, torch.full((n,), pos - 1),
                    torch.randint(0, vocab, (n,), generator=g), torch.randint(0, vocab, (n, 2), generator=g))


def compare(family: str, n: int, scale: float) -> dict:
    model = tiny_family_model(family, dtype=torch.float64, scale=scale, seed=0)
    task = task_for(n)
    t = time.perf_counter()
    scores = eap_scores(model, task, metric="logit_diff", progress=False)
    graph = scores.graph
    edge = graph.edge_mask()
    pairs = edge.nonzero().tolist()
    full = float(patched_metric(model, task, edge, metric="logit_diff"))
    cuts = torch.stack([edge.clone() for _ in pairs])
    for k, (s, r) in enumerate(pairs):
        cuts[k, s, r] = False
    exact = patched_metric(model, task, cuts, metric="logit_diff", chunk=64).double() - full
    est = scores.edges.mean(0)[edge].double()
    err = (est - exact).abs()
    top = lambda v: set(v.abs().argsort(descending=True)[:10].tolist())  # noqa: E731
    return {"family": family, "edges": len(pairs), "corr": float(torch.corrcoef(torch.stack([est, exact]))[0, 1]),
            "mean|err|/mean|exact|": float(err.mean() / exact.abs().mean()), "max|err|": float(err.max()),
            "max|exact|": float(exact.abs().max()), "top-10 shared": len(top(est) & top(exact)),
            "seconds": time.perf_counter() - t}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--families", nargs="+", default=["gpt2", "llama", "pythia", "gemma2", "olmo2"])
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    print("| family | edges | correlation (EAP, exact) | mean abs error / mean abs exact | max abs error | "
          "max abs exact | top-10 edges shared | s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for f in args.families:
        r = compare(f, args.n, args.scale)
        print(f"| {f} | {r['edges']} | {r['corr']:.3f} | {r['mean|err|/mean|exact|']:.3f} | {r['max|err|']:.3g} | "
              f"{r['max|exact|']:.3g} | {r['top-10 shared']} | {r['seconds']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
