"""Ablations stacked along the batch against one forward pass per ablation, in one process.

GPT-2-small-shaped model with random weights (tests' and benchmarks' ``gpt2_shaped_model``), IOI prompts from the
course's generator. Three workloads the notebooks run, each two ways:

* **ablate_each** (notebook 00): the mean logit difference with each of ``--components`` components ablated
  alone (mean ablation). Reference: ``run_with_ablation`` once per component. Library:
  ``core.circuits.ablate_each`` (the components' runs stacked, the reference run made once).
* **necessity** (notebook 02): clean run, the circuit and 5 size-matched controls (zero ablation), per-example
  logit difference. Reference: one ``run_with_ablation`` per job. Library: ``methods.consistency.necessity``.
* **circuit necessity** (notebook 01): a circuit and 5 controls patched from the corrupted run. Reference:
  ``circuit_necessity`` once per circuit. Library: ``methods.circuit_eval.evaluate_circuits``.

Each pair's results are compared (max abs difference). ``--only stacked`` / ``--only reference`` runs one side
(for peak memory: time the command with farm-bench).

    python benchmarks/stacked_ablation.py --n 16 --threads 1
"""
from __future__ import annotations

import argparse
import sys
import time

from gpt2_shape import gpt2_shaped_model  # (puts the package and tests/ on the path)

import torch  # noqa: E402

from tutorial_lib.core.circuits import Circuit, ablate_each, run_with_ablation  # noqa: E402
from tutorial_lib.core.controls import size_matched_random  # noqa: E402
from tutorial_lib.methods import consistency as C  # noqa: E402
from tutorial_lib.methods.circuit_eval import circuit_necessity, evaluate_circuits  # noqa: E402
from tutorial_lib.tasks.ioi import make_ioi  # noqa: E402


def timed(fn):
    t = time.time()
    out = fn()
    return out, time.time() - t


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=16)
    p.add_argument("--components", type=int, default=24)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--only", choices=["stacked", "reference"], default=None)
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    model = gpt2_shaped_model(seed=0)
    task = make_ioi(model.tokenizer, n=a.n, seed=0)
    metric = task.logit_diff
    comps = [f"a{l}.h{h}" for l in range(12) for h in range(12)][:a.components - a.components // 4] + \
        [f"m{l}" for l in range(a.components // 4)]
    circuit = Circuit(["a9.h6", "a9.h9", "a10.h0", "a10.h7", "a11.h10", "m0", "m9"], name="S")
    controls = [size_matched_random(model, circuit, seed=s) for s in range(5)]
    rows = []
    with torch.no_grad():
        # ablate_each
        if a.only != "reference":
            fast, t_fast = timed(lambda: ablate_each(model, task.clean, metric, comps, "mean", reference=task.clean))
        if a.only != "stacked":
            ref, t_ref = timed(lambda: {c: float(metric(run_with_ablation(model, task.clean, [c], "mean",
                                                                           reference=task.clean)).mean()) for c in comps})
        if a.only is None:
            diff = max(abs(fast[c] - ref[c]) for c in comps)
            rows.append(("ablate_each", f"{len(comps)} components, mean ablation", t_ref, t_fast, diff))
        # consistency necessity
        jobs = [((), 0), (circuit, 0)] + [(c, s) for s, c in enumerate(controls)]
        if a.only != "reference":
            res, t_fast = timed(lambda: C.necessity(model, task, circuit, measure="logit_diff", seeds=range(5),
                                                    n_permutations=100, batch_size=a.n))
        if a.only != "stacked":
            vals, t_ref = timed(lambda: [task.logit_diff(run_with_ablation(model, task.clean, comps_, "zero"))
                                         if len(comps_) else task.logit_diff(model(task.clean)) for comps_, _ in jobs])
        if a.only is None:
            got = [res.clean, res.clean - res.circuit_drop] + [res.clean - d for d in res.random_drops]
            diff = max(float((g - v).abs().max()) for g, v in zip(got, vals))
            rows.append(("consistency.necessity", "clean + circuit + 5 controls, zero ablation", t_ref, t_fast, diff))
        # circuit necessity (corrupted-run patching)
        circuits = [circuit] + controls
        if a.only != "reference":
            ev, t_fast = timed(lambda: evaluate_circuits(model, task, circuits, "necessity"))
        if a.only != "stacked":
            ev_ref, t_ref = timed(lambda: [circuit_necessity(model, task, c) for c in circuits])
        if a.only is None:
            diff = max(abs(float(x.value) - float(y.value)) for x, y in zip(ev, ev_ref))
            rows.append(("evaluate_circuits", "circuit + 5 controls, patched from the corrupted run", t_ref, t_fast, diff))
    if a.only is None:
        print(f"{a.n} IOI prompts x {task.clean.shape[1]} tokens, GPT-2-small shape, {a.threads} thread(s)")
        print("| workload | what | one pass each (s) | stacked (s) | speedup | max abs diff |")
        print("| --- | --- | --- | --- | --- | --- |")
        for name, what, t_ref, t_fast, diff in rows:
            print(f"| {name} | {what} | {t_ref:.1f} | {t_fast:.1f} | {t_ref / t_fast:.2f}x | {diff:.1e} |")
    else:
        print(f"{a.only}: done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
