# %% [markdown]
# # 02 · Are circuits consistent within a task, and specific to it?
#
# Li & Subramani (2026), "How much do circuits tell us?", ask two questions of the one circuit per task that papers
# report: **consistency** (found per example, do circuits use the same components?) and **specificity** (do unrelated
# tasks use, and need, the same components?). You repeat their study on addition, boolean logic, IOI, copy-colours
# multiple choice and greater-than (online, ARC too).
#
# <details><summary>Learning objectives</summary>
#
# 1. compute EAP scores (one edge, then all edges at once), a component's two node scores, and per-example circuits;
# 2. measure consistency (the shared set S_P, reuse@P) against random circuits;
# 3. test a circuit's *necessity* against a size-matched control with a paired permutation test;
# 4. measure specificity: cross-task ablation, Jaccard overlap against chance, a shared core;
# 5. say what such results show about a model and what they do not.
# </details>
#
# | section | exercises (★ easy … ★★★ hard; minutes to write) | time |
# | --- | --- | --- |
# | 0. Setup | — | 5 min |
# | 1. Per-example EAP scores | 1. one edge's score (★★★, 15 min); 2. all edges at once (★★★, 20 min); 3. node scores (★★, 10 min) | 55 min |
# | 2. Consistency: S_P and reuse@P | 4. S_P (★, 5 min); 5. reuse@P (★, 10 min) | 25 min |
# | 3. Necessity | 6. the control (★★, 10 min); 7. the p-value (★★, 10 min) | 35 min |
# | 4. Specificity | 8. a cross-task row (★★, 10 min); 9. Jaccard vs chance (★★, 10 min) | 35 min |
# | 5. Composition | — | 10 min |
# | 6. The ablation panel | — | 10 min |
# | 7. What this tells us | — | 5 min |
#
# Write each exercise's function body; the check below it says whether it is right (solutions: `notebooks/solutions/`).
# Numbers marked **paper** are the paper's (1-8B models); all others are measured on your model and describe it only.
# %% [markdown]
# ## 0. Setup (~5 min)
# %% tags=course-install
from tutorial_lib import setup

env = setup(seed=0)
# %%
from tutorial_lib import load_model
from tutorial_lib.course import reading

import torch

# "auto": GPT-2 small online, the zoo model "zoo-multitask-medium" offline. Any of the paper's families works too,
# e.g. "qwen3-0.6b", "llama-3.2-1b", "gemma-2-2b", "olmo-2-1b" (valid_names() lists them; sizes follow the device).
MODEL_NAME = "auto"
model = load_model(MODEL_NAME)
if env.device == "cpu" and model.cfg.d_model < 512:
    torch.set_num_threads(1)  # a small model gains nothing from more CPU threads, and they slow a busy CPU down
# %% [markdown]
# Each task is a *task object* ([glossary](00_start_here.ipynb#glossary)): clean and corrupted prompts, answer tokens,
# a per-example metric. A task the tokenizer cannot carry is skipped, with the reason.
#
# <details><summary>Tokenizers and task details</summary>
#
# Tasks follow the tokenizer's BOS token (Qwen3 has none) and numbers (GPT-2 writes `" 68"` as one token; Llama 3 as a
# space and `"68"`; Qwen3 and Gemma digit by digit, where addition reads the sum's first token, as the paper does).
# Prompts are plain text on -IT / -Instruct models too (the paper used no chat template). Greater-than needs GPT-2's
# year tokens; ARC needs the hub and a vocabulary that can write science questions (the zoo's cannot). On the zoo
# model, boolean logic uses the 2-4 operators of its held-out evaluation (trained on 1-5; the paper used 2-6).
# </details>
# %%
import pandas as pd

from tutorial_lib.course import sizes
from tutorial_lib.studies.consistency import study_tasks
from tutorial_lib.tasks.tokenizers import conventions

# per task: the paper's 1,000 on a large GPU, 256 on a T4-class GPU, 128 on the zoo model, 48 for a large model
# on a laptop CPU
N_EXAMPLES = sizes.pick("examples per task", paper=1000, t4=256, full=128, cpu=48, quick=16, model=model)
print("tokenizer:", conventions(model.tokenizer))
tasks = study_tasks(model, n=N_EXAMPLES, seed=0)
with torch.no_grad():
    clean_accuracy = {name: task.accuracy(model(task.clean)).mean().item() for name, task in tasks.items()}
short = lambda p: p if len(p) <= 90 else p[:44] + " … " + p[-44:]  # noqa: E731
pd.DataFrame({"example prompt": [short(t.prompts[0].replace(str(model.tokenizer.bos_token), "").strip()) for t in tasks.values()],
              "answer": [model.to_string(int(t.answers[0])) for t in tasks.values()],
              "clean accuracy": clean_accuracy.values()}, index=list(tasks))
# %% [markdown]
# Necessity measures lost *accuracy*, so it needs a task the model does: *performed*, at clean accuracy ≥ 90% (dashed
# line). Claims are checked on performed tasks.
# %%
from tutorial_lib.viz.figures import bar

MIN_ACCURACY = 0.9
performed = [name for name, acc in clean_accuracy.items() if acc >= MIN_ACCURACY]
fig = bar(list(clean_accuracy), list(clean_accuracy.values()), title="How well the model does each task (no ablation)",
          y_title="accuracy (fraction of examples)", x_title="task",
          colors=["seagreen" if n in performed else "lightgrey" for n in clean_accuracy])
fig.add_hline(y=MIN_ACCURACY, line_dash="dash", line_color="grey", annotation_text="performed (≥ 90%)",
              annotation_position="top left")
fig.show()
below = [n for n in tasks if n not in performed]
reading.see(f"Performed, {len(performed)} of {len(tasks)}: " + ", ".join(f"{n} {clean_accuracy[n]:.0%}" for n in performed)
            + (". Below the bar, left out of the claims: " + ", ".join(f"{n} {clean_accuracy[n]:.0%}" for n in below) + "."
               if below else "."))
# %% [markdown]
# `K`: a per-example circuit's size, as a fraction of all components (heads and MLPs). `P`: the percentage of
# per-example circuits a component must be in to be *shared*. Two settings run side by side: the **paper's** (K = 10%,
# P = 100 or 95, **zero ablation**: outputs set to 0), and a **teaching** one with a few shared components per task
# (the paper's can leave one on a small model), used from section 3 on.
#
# <details><summary>How the two settings are chosen</summary>
#
# The paper's P is the largest of 100 and 95 giving every performed task a non-empty shared set (else the largest P of
# the grid that does). The teaching setting is the paper's if the performed tasks' median |S_P| there is at least 3,
# else the smallest K of the grid (from 10% up), and the largest P there, where it is.
# </details>
# %%
import math

from tutorial_lib.methods.attribution import EAPGraph

graph = EAPGraph.from_model(model)
n_components = len(graph.components)
METRIC = "logit_diff"  # what EAP attributes; section 1.2 explains the choice
KS = (0.01, 0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.40, 0.50)
PS = (50, 75, 90, 95, 100)
K_MAIN = 0.10  # the paper's
ABLATION = "zero"  # the paper's; "mean" or "resample" also work: see 3.3
SEEDS = range(5)  # seeds of the random controls
n_mlps = sum(c.startswith("m") for c in graph.components)
print(f"{n_components} components ({n_components - n_mlps} heads + {n_mlps} MLPs); "
      f"K_MAIN = {K_MAIN:.0%} = {math.ceil(K_MAIN * n_components - 1e-9)} components per example circuit; {ABLATION} ablation")
# %% [markdown]
# ## 1. Per-example EAP scores (~55 min)
#
# ### 1.1 What an edge score is
#
# An *edge* runs from a *sender* component into a later *receiver*. **Edge attribution patching** (EAP,
# [glossary](00_start_here.ipynb#glossary)) estimates the metric's change if one edge carried the corrupted run's value,
# for all edges from one corrupted forward and one clean forward and backward pass:
#
# $$\text{score}(s \to r) = \sum_{\text{pos},\,d}(\text{out}_s^{\text{corrupt}} - \text{out}_s^{\text{clean}})\,\frac{\partial\,\text{metric}}{\partial\,\text{in}_r}$$
#
# $out_s$: what the sender writes into the residual stream; $in_r$: the residual stream the receiver reads.
# Receivers: each head's query, key and value inputs, each MLP's input, and the logits (the final residual stream,
# before the last LayerNorm).
#
# <details><summary>Why an estimate (Syed, Rager & Conmy 2023)</summary>
#
# Activation patching each edge exactly takes one forward pass per edge. EAP takes the first-order Taylor term instead:
# the change in the sender's output times the metric's gradient at the receiver's input.
# </details>
# %%
print(f"senders: {graph.senders}")
print(f"receivers: {graph.receivers[:6]} ... {graph.receivers[-3:]}")
print(f"{int(graph.edge_mask().sum())} edges")
# %% [markdown]
# **Exercise 1.** Compute the EAP score of the edge from one component into the logits, for one example, with the logit
# difference as the metric:
#
# 1. cache the sender's output on the corrupted prompts (`sender_hook`, e.g. `blocks.0.hook_mlp_out`);
# 2. run the clean prompts with a forward hook, on the sender's output and on the final residual stream
#    (`blocks.{L-1}.hook_resid_post`), that calls `act.retain_grad()` and keeps the tensor;
# 3. call `.backward()` on `task.logit_diff(logits)[example]`;
# 4. return `((corrupted output - clean output) * final-residual gradient).sum()` for that example, as a float.
#
# Use `with model.hooks(...)` so that no hook stays attached.
#
# <details><summary>Hint</summary>
#
# `model.run_with_cache(task.corrupt, names_filter=sender_hook)` gives the corrupted output. A hook
# `def keep(act, hook): act.retain_grad(); kept[hook.name] = act; return act` on both hook points keeps the
# clean tensors; after `.backward()`, `kept[final_hook].grad[example]` is the gradient. Detach the clean output
# before subtracting, and call `model.zero_grad(set_to_none=True)` at the end.
# </details>
# %%
def edge_score_to_logits(model, task, sender_hook, example):
    # BEGIN SOLUTION: cache the corrupted output; keep the clean output and the final residual stream (retain_grad) in hooks; backpropagate logit_diff[example]; return ((corrupt - clean) * grad).sum() for that example
    final_hook = f"blocks.{model.cfg.n_layers - 1}.hook_resid_post"
    with torch.no_grad():
        _, corrupt_cache = model.run_with_cache(task.corrupt, names_filter=sender_hook)
    kept = {}

    def keep(act, hook):
        act.retain_grad()
        kept[hook.name] = act
        return act

    with model.hooks(fwd_hooks=[(sender_hook, keep), (final_hook, keep)]):
        logits = model(task.clean)
    task.logit_diff(logits)[example].backward()
    delta = corrupt_cache[sender_hook][example] - kept[sender_hook][example].detach()
    score = (delta * kept[final_hook].grad[example]).sum().item()
    model.zero_grad(set_to_none=True)
    return score
    # END SOLUTION


from tutorial_lib import checks

checks.check_edge_score(edge_score_to_logits, model, tasks["ioi"])
# %% [markdown]
# **Exercise 2.** Now every edge of every example at once. Write `eap_edge_scores(model, task, graph)`: the scores
# (logit difference), `[n_examples, len(graph.senders), len(graph.receivers)]`, 0 where `graph.edge_mask()` is False,
# from one corrupted forward, one clean forward and one backward pass.
#
# <details><summary>Hint 1: the idea</summary>
#
# Exercise 1 for every pair at once. Examples in a batch never interact, so the gradient of the batch's *summed*
# metric is each example's own. Stack the senders' differences as `[example, sender, pos, d_model]` and the
# receivers' gradients as `[example, receiver, pos, d_model]`: one `torch.einsum` scores every edge.
# </details>
# <details><summary>Hint 2: the API</summary>
#
# Inside `with engine_view(model, split_qkv=True, attn_result=True, mlp_in=True, frozen=True):` (from
# `tutorial_lib.core.view`) the model hooks each head's output `blocks.{l}.attn.hook_result` and inputs
# `blocks.{l}.hook_q_input` (`k`, `v`), all `[batch, pos, head, d_model]`, and `blocks.{l}.hook_mlp_in`. `embed`
# writes at `blocks.0.hook_resid_pre`, `m{l}` at `hook_mlp_out`; `logits` reads the last `hook_resid_post`. With
# frozen weights, let the `hook_resid_pre` hook return `act.detach().requires_grad_(True)`.
# </details>
# <details><summary>Hint 3: code</summary>
#
# ```python
# def where(name, out):  # (hook, head or None) of a sender (out=True) or a receiver
#     if name in ("embed", "logits"):
#         return ("blocks.0.hook_resid_pre" if out else f"blocks.{L - 1}.hook_resid_post"), None
#     if name.startswith("m"):
#         return f"blocks.{name[1:]}.hook_mlp_{'out' if out else 'in'}", None
#     l, h = name[1:].split(".")[:2]
#     return (f"blocks.{l}.attn.hook_result" if out else f"blocks.{l}.hook_{name[-1]}_input"), int(h[1:])
#
# # cache the corrupted run; keep the clean activations (retain_grad); task.logit_diff(logits).sum().backward()
# diff = torch.stack([pick(corrupt, where(s, True)) - pick(clean, where(s, True)) for s in graph.senders], 1)
# grad = torch.stack([pick(grads, where(r, False)) for r in graph.receivers], 1)
# return torch.einsum("bspd,brpd->bsr", diff, grad) * graph.edge_mask()
# ```
# </details>
# %%
from tutorial_lib.core.view import engine_view


def eap_edge_scores(model, task, graph):
    # BEGIN SOLUTION: in engine_view, cache the senders' corrupted outputs; keep the clean activations (retain_grad); backpropagate the summed metric once; stack, einsum over positions and d_model, mask
    L = model.cfg.n_layers

    def where(name, out):  # (hook, head or None) of a sender (out=True) or a receiver
        if name in ("embed", "logits"):
            return ("blocks.0.hook_resid_pre" if out else f"blocks.{L - 1}.hook_resid_post"), None
        if name.startswith("m"):
            return f"blocks.{name[1:]}.hook_mlp_{'out' if out else 'in'}", None
        l, h = name[1:].split(".")[:2]
        return (f"blocks.{l}.attn.hook_result" if out else f"blocks.{l}.hook_{name[-1]}_input"), int(h[1:])

    def pick(acts, at):
        hook, head = at
        return acts[hook] if head is None else acts[hook][:, :, head]

    hooks = {where(s, True)[0] for s in graph.senders} | {where(r, False)[0] for r in graph.receivers}
    with engine_view(model, split_qkv=True, attn_result=True, mlp_in=True, frozen=True):
        with torch.no_grad():
            _, corrupt = model.run_with_cache(task.corrupt, names_filter=lambda n: n in hooks)
        clean = {}

        def keep(act, hook):
            if hook.name == "blocks.0.hook_resid_pre":
                act = act.detach().requires_grad_(True)  # frozen weights: the gradient starts here
            act.retain_grad()
            clean[hook.name] = act
            return act

        with model.hooks(fwd_hooks=[(lambda n: n in hooks, keep)]):
            logits = model(task.clean)
        task.logit_diff(logits).sum().backward()  # a sum: each example keeps its own gradient
        grads = {k: v.grad for k, v in clean.items()}
        diff = torch.stack([pick(corrupt, where(s, True)) - pick(clean, where(s, True)).detach() for s in graph.senders], 1)
        grad = torch.stack([pick(grads, where(r, False)) for r in graph.receivers], 1)
    return torch.einsum("bspd,brpd->bsr", diff, grad) * graph.edge_mask().to(diff.device)
    # END SOLUTION


checks.check_eap_edges(eap_edge_scores, model, tasks["ioi"])
# %% [markdown]
# ### 1.2 Which metric to attribute
#
# The paper attributes the answers' summed log-probability. With p(answer) near 1 it *saturates*: its gradient, and so
# EAP's linear estimate, says little about a real patch. The logit difference does not. Check: EAP (your exercise 2's
# edges, summed per component) against exact patching of each component, on a few dozen IOI examples:
# %%
from tutorial_lib.methods.attribution import eap_scores, exact_node_effects
from tutorial_lib.viz.consistency import plot_eap_vs_exact

probe = tasks["ioi"].subset(range(sizes.pick("examples for the exact comparison", full=48, cpu=16, quick=8, model=model)))
yours = torch.cat([eap_edge_scores(model, probe.subset(range(i, min(i + 8, len(probe)))), graph).cpu()
                   for i in range(0, len(probe), 8)])  # your exercise 2, 8 examples at a time
pairs = {"answer_logprob": (eap_scores(model, probe, metric="answer_logprob", progress=False).signed_nodes,
                            exact_node_effects(model, probe, metric="answer_logprob")),
         "logit_diff": (yours.sum(2)[:, 1:], exact_node_effects(model, probe, metric="logit_diff"))}  # edges summed per component
plot_eap_vs_exact(pairs).show()
corr = lambda a, b: torch.corrcoef(torch.stack([a.flatten().float(), b.flatten().float()]))[0, 1].item()  # noqa: E731
r = {m: corr(est, true) for m, (est, true) in pairs.items()}
r_abs = {m: corr(est.abs(), true.abs()) for m, (est, true) in pairs.items()}  # what the circuits rank by
better = max(r_abs, key=r_abs.get)
reading.see(f"On {len(probe)} IOI examples (clean accuracy {clean_accuracy['ioi']:.0%}), EAP against exact patching: signed "
            + "r = " + ", ".join(f"{v:.2f} ({m})" for m, v in r.items()) + "; absolute values (what circuits rank) r = "
            + ", ".join(f"{v:.2f}" for v in r_abs.values()) + f". {better} agrees better"
            + (": it is `METRIC`." if better == METRIC else f"; this notebook still attributes `METRIC = {METRIC!r}`: switch it and re-run.")
            + (" So low a signed r means EAP often gets a component's *direction* wrong: read circuits as 'large effects', "
               "not signed attributions." if max(r.values()) < 0.3 else ""))
# %% [markdown]
# Each dot: one (example, component); on the dotted line, estimate = truth (titles: Pearson r).
#
# <details><summary>Other metrics and tasks</summary>
#
# `METRIC` sets what this notebook attributes (for greater-than, the logit of YY+1 minus that of YY−1). Saturation
# bites hardest on a task the model always gets right: set `probe` to another task to compare. `METRIC =
# "answer_logprob"` follows the paper more literally: try it at the end and see which conclusions change.
# </details>
#
# ### 1.3 Node scores, every task
#
# A component's **node score**: the paper's **sum** score adds the absolute scores of its outgoing edges, favouring
# early layers by construction (a layer-0 MLP feeds every later receiver); the **mean-edge** score, their mean, does
# not. One EAP run per task:
# %%
from tutorial_lib.methods.attribution import eap_for_tasks
from tutorial_lib.methods.consistency import mean_edge_scores

scores = eap_for_tasks(model, tasks, metric=METRIC, batch_size=64)
scores_mean = {name: mean_edge_scores(s) for name, s in scores.items()}  # the same edges, the mean-edge node score
print({name: tuple(s.nodes.shape) for name, s in scores.items()}, "(examples, components)")
# %% [markdown]
# **Exercise 3.** Write `node_scores(edges, edge_mask)`: `edges` holds one example's signed edge scores,
# `[n_senders, n_receivers]`, rows following `graph.senders` (the first, `embed`, is not a component), 0 off the edges;
# `edge_mask` (bool, same shape) marks the edges. Return two tensors over `graph.components` (the senders after
# `embed`): the sum score and the mean-edge score.
#
# <details><summary>Hint</summary>
#
# Take `edges.abs()`; sum it over the receivers (dimension 1); divide by `edge_mask.sum(1)`, the number of
# edges leaving each sender; drop row 0 of both.
# </details>
# %%
def node_scores(edges, edge_mask):
    # BEGIN SOLUTION: sum |edges| over the receivers; divide by each sender's own number of edges (edge_mask.sum(1)); drop row 0 (embed)
    total = edges.abs().sum(1)
    mean = total / edge_mask.sum(1).float()
    return total[1:], mean[1:]
    # END SOLUTION


checks.check_node_scores(node_scores, scores["ioi"])
# %%
scores["ioi"].plot().show()
top3 = {kind: [scores["ioi"].components[i] for i in s["ioi"].nodes.mean(0).argsort(descending=True)[:3].tolist()]
        for kind, s in (("sum", scores), ("mean-edge", scores_mean))}
reading.see("IOI's highest mean scores: sum " + ", ".join(top3["sum"]) + "; mean-edge " + ", ".join(top3["mean-edge"]) + ". "
            + ("The two agree." if set(top3["sum"]) == set(top3["mean-edge"]) else "They differ: the sum rewards many edges."))
# %% [markdown]
# Single examples (change the number):
# %%
scores["ioi"].plot(example=0)
# %% [markdown]
# ### 1.4 Per-example circuits: the top K%
#
# A per-example circuit: the K% of components with the highest node scores *for that example*. The heatmap: per task,
# the fraction of its circuits containing each component (dark in one row only: that task's own).
# %%
for i in range(3):
    print(scores["ioi"].circuits(K_MAIN)[i])
# %%
from tutorial_lib.viz.consistency import plot_membership

plot_membership(scores, K_MAIN).show()
freq = {n: sc.top_k(K_MAIN).float().mean(0) for n, sc in scores.items()}
always = {n: [sc.components[i] for i in (f >= 0.9).nonzero()[:, 0].tolist()] for (n, f), sc in zip(freq.items(), scores.values())}
reading.see("In ≥ 90% of a task's circuits: "
            + "; ".join(f"{n}: {', '.join(v) or 'none'}" for n, v in always.items()) + ".")
# %% [markdown]
# ## 2. Consistency: S_P and reuse@P (~25 min)
#
# With `membership[i, c]` True when component c is in example i's circuit (N examples), the **shared set** S_P holds
# the components in at least `ceil(P/100 × N)` circuits; **reuse@P** is the mean fraction of a circuit S_P covers:
#
# $$\text{reuse@}P = \frac{1}{N}\sum_i \frac{|C_i \cap S_P|}{|C_i|}$$
#
# **Exercise 4.** Write `shared_set_p(membership, components, p)`: `membership` is a bool tensor
# `[n_examples, n_components]`, `components` names its columns; return the set of names in S_P.
#
# <details><summary>Hint</summary>
#
# Count each column's circuits with `membership.sum(0)` and keep the names whose count is at least
# `math.ceil(p / 100 * n_examples)`.
# </details>
# %%
def shared_set_p(membership, components, p):
    # BEGIN SOLUTION: count each component's circuits; keep those in at least ceil(p/100 * N)
    need = math.ceil(p / 100 * membership.shape[0])
    return {c for c, count in zip(components, membership.sum(0).tolist()) if count >= need}
    # END SOLUTION


checks.check_shared_set(shared_set_p, scores["ioi"].top_k(K_MAIN), scores["ioi"].components)
# %% [markdown]
# **Exercise 5.** Write `reuse_at_p(membership, p)` for the same bool tensor; return a float. (Library:
# `tutorial_lib.methods.consistency.reuse_at`.)
#
# <details><summary>Hint</summary>
#
# Build S_P as a bool mask over the columns, as in exercise 4; `(membership & mask).sum(1)` is |C_i ∩ S_P|, and
# `membership.sum(1)` is |C_i|.
# </details>
# %%
def reuse_at_p(membership, p):
    # BEGIN SOLUTION: S_P = components in at least ceil(p/100 * N) circuits; reuse = mean over examples of |C_i ∩ S_P| / |C_i|
    n = membership.shape[0]
    in_shared = membership.sum(0) >= math.ceil(p / 100 * n)
    covered = (membership & in_shared).sum(1).float()
    return (covered / membership.sum(1).float()).mean().item()
    # END SOLUTION


checks.check_reuse_at_p(reuse_at_p, scores["ioi"].top_k(K_MAIN))
# %% [markdown]
# Any two circuits of a small model share some. The **random baseline** (dashed) draws K% of the components uniformly
# per example.
#
# **Predict first.** At K = 10% and the main P, will every performed task's reuse beat the random baseline by at
# least 0.2? (Both answers count where a task's 95% bootstrap interval straddles 0.2: every prediction here is
# scored by the [fair-prediction rule](00_start_here.ipynb#glossary).)
# %%
PREDICT_REUSE_BEATS_RANDOM = True  # LEARNER: None  # True or False
# %%
from tutorial_lib.methods.consistency import reuse_sweep
from tutorial_lib.viz.consistency import plot_reuse_sweeps

sweeps = {name: reuse_sweep(s, ks=KS, ps=PS, seed=0) for name, s in scores.items()}
plot_reuse_sweeps(sweeps)
# %% [markdown]
# The two settings (|S_P|: the shared set's size):
# %%
from tutorial_lib.methods.consistency import largest_shared_p
from tutorial_lib.studies.consistency import teaching_setting

P_MAIN = largest_shared_p(scores, K_MAIN, (100, 95), performed) or largest_shared_p(scores, K_MAIN, PS, performed) or min(PS)
print(f"paper's setting: K = {K_MAIN:.0%}, P = {P_MAIN}: " + ("P = 100 or 95 gives every performed task a non-empty S_P"
      if P_MAIN in (100, 95) else "neither 100 nor 95 gives every performed task a non-empty S_P; the largest P that does"))
K_TEACH, P_TEACH, TEACH_RULE = teaching_setting(scores, performed, KS, PS, min_size=3, paper_k=K_MAIN)
print(f"teaching setting: K = {K_TEACH:.0%} ({math.ceil(K_TEACH * n_components - 1e-9)} components per circuit), "
      f"P = {P_TEACH}: {TEACH_RULE}")


def reuse_at_setting(k, p):
    k_col, p_row = KS.index(k), PS.index(p)
    return pd.DataFrame({name: {"reuse@P": float(sw.reuse[p_row, k_col]), "random reuse@P": float(sw.random_reuse[p_row, k_col]),
                                "|S_P|": int(sw.shared_size[p_row, k_col])} for name, sw in sweeps.items()}).T.astype({"|S_P|": int})


reuse_paper, reuse_table = reuse_at_setting(K_MAIN, P_MAIN), reuse_at_setting(K_TEACH, P_TEACH)
main_label = f"main (K = {K_MAIN:.0%}, P = {P_MAIN}" + ("; the paper's P" if P_MAIN in (100, 95) else "; the paper's P is 95–100") + ")"
pd.concat({main_label: reuse_paper, f"teaching (K = {K_TEACH:.0%}, P = {P_TEACH})": reuse_table}, axis=1).round(2)
# %%
rand_max = reuse_paper["random reuse@P"].max()
k_n = math.ceil(K_MAIN * n_components - 1e-9)
informative = [(k, p) for j, k in enumerate(KS) for i, p in enumerate(PS) if max(float(sw.random_reuse[i, j]) for sw in sweeps.values()) > 0]
k_min = min((k for k, _ in informative), default=None)
sizes_sp = sorted(set(reuse_paper["|S_P|"].tolist()))
sizes_teach = reuse_table.loc[performed or list(tasks), "|S_P|"]
reading.see(f"Paper's setting: reuse@{P_MAIN} {reuse_paper['reuse@P'].min():.2f}–{reuse_paper['reuse@P'].max():.2f}, "
            + (f"|S_P| = {sizes_sp[0]} on every task. " if len(sizes_sp) == 1 else f"|S_P| {sizes_sp[0]} to {sizes_sp[-1]}. ")
            + (f"Random baseline **0** (circuits of {k_n} random of {n_components} components share nothing at P = {P_MAIN}); " + (f"informative from K = {k_min:.0%} up. " if k_min is not None else
               "no swept K and P changes that. ") if rand_max == 0 else f"Random circuits reach up to {rand_max:.2f}. ")
            + f"Teaching setting (K = {K_TEACH:.0%}, P = {P_TEACH}): median |S_P| {sizes_teach.median():g} "
            f"({sizes_teach.min()} to {sizes_teach.max()}).",
            paper="at K = 10%, reuse of 40–70% for most task-model pairs.", model=model)
# %% [markdown]
# **Paper:** at K = 10%, reuse of 40-70% for most task-model pairs.
#
# **Claim** (both settings, each performed task): circuits reuse S_P at least 0.2 more than **random sets of S_P's
# size and make-up** (heads and MLPs from outside S_P; the uniform baseline is often 0, which anything beats). It fails
# below 0.2; it is *not testable* when S_P is empty, under 20 such sets exist, their baseline is 0, or the margin is
# within the examples' spread.
# %%
from tutorial_lib.course.claims import check, claim
from tutorial_lib.studies.consistency_claims import reuse_claim

reuse_results = {(setting, name): check(*reuse_claim(model, scores[name], name, k, p, setting).as_args())
                 for setting, k, p in (("main", K_MAIN, P_MAIN), ("teaching", K_TEACH, P_TEACH)) for name in performed}
margin = (reuse_paper["reuse@P"] - reuse_paper["random reuse@P"])[performed]  # against uniform random circuits, as in the table
from tutorial_lib.studies.consistency import reuse_margin_range
from tutorial_lib.studies.fair import answers_every

open_answers = answers_every({n: reuse_margin_range(scores[n], K_MAIN, P_MAIN, KS) for n in performed}, 0.2)
reading.predicted(PREDICT_REUSE_BEATS_RANDOM, open_answers | {bool((margin >= 0.2).all())},
                  "every performed task's reuse beats random by ≥ 0.2", options=(True, False))
# %% [markdown]
# ## 3. Necessity (~35 min)
#
# S_P is *scored* highly, but is it needed? Ablate it and measure accuracy. Ablating *any* few components of a small
# model hurts, so compare with a **control**: as many random heads and MLPs as S_P, none in it.
#
# **Exercise 6.** Write `size_matched_control(circuit, heads, mlps, seed)`: `circuit` is a set of names; `heads`,
# `mlps` list the model's. Return as many heads and as many MLPs as the circuit, drawn without replacement from those
# outside it (same seed, same set). If too few heads (or MLPs) lie outside, raise a `ValueError` saying how many are
# needed and how many are left, not a smaller or overlapping control.
#
# <details><summary>Hint</summary>
#
# `free_heads = [h for h in heads if h not in circuit]` (and the same for MLPs); count the circuit's heads and
# MLPs; `np.random.default_rng(seed).choice(free_heads, n_heads, replace=False)` draws them.
# </details>
# %%
import numpy as np


def size_matched_control(circuit, heads, mlps, seed):
    # BEGIN SOLUTION: count the circuit's heads and MLPs; if too few of either lie outside it, raise ValueError giving both counts; else draw as many of each from those outside it with np.random.default_rng(seed)
    rng = np.random.default_rng(seed)
    free_heads = [h for h in heads if h not in circuit]
    free_mlps = [m for m in mlps if m not in circuit]
    n_heads = sum(c in heads for c in circuit)
    n_mlps = sum(c in mlps for c in circuit)
    if n_heads > len(free_heads) or n_mlps > len(free_mlps):
        raise ValueError(f"cannot draw a size-matched control: need {n_heads} heads and {n_mlps} MLPs outside the "
                         f"circuit, but only {len(free_heads)} heads and {len(free_mlps)} MLPs are left")
    return {str(c) for c in rng.choice(free_heads, n_heads, replace=False)} | \
           {str(c) for c in rng.choice(free_mlps, n_mlps, replace=False)}
    # END SOLUTION


checks.check_size_matched_control(size_matched_control, model)
# %% [markdown]
# Is S_P's drop beyond chance? Each example gives two drops; if their labels are exchangeable (the null), random sign
# flips of each example's difference give statistics as large as the observed one: the **paired permutation test**.
#
# **Exercise 7.** Write `paired_permutation_p(a, b, n_permutations, seed)` for two 1-D tensors: with `d = a - b`, draw
# `n_permutations` random sign vectors (±1 per example, seeded), and return `(number of permutations with
# mean(signs * d) >= mean(d), plus 1) / (n_permutations + 1)`. (Library: `tutorial_lib.core.controls.paired_permutation_test`.)
#
# <details><summary>Hint</summary>
#
# `torch.randint(0, 2, (n_permutations, len(d)), generator=torch.Generator().manual_seed(seed)) * 2 - 1` gives
# the signs; `(signs * d).mean(1)` the permuted statistics. One-sided: no absolute values.
# </details>
# %%
def paired_permutation_p(a, b, n_permutations, seed):
    # BEGIN SOLUTION: d = a - b; random ±1 signs per example and permutation; p = (#{mean(signs * d) >= mean(d)} + 1) / (n_permutations + 1)
    d = (a - b).double()
    gen = torch.Generator().manual_seed(seed)
    signs = torch.randint(0, 2, (n_permutations, len(d)), generator=gen).double() * 2 - 1
    stats = (signs * d).mean(1)
    return ((stats >= d.mean() - 1e-12).sum().item() + 1) / (n_permutations + 1)
    # END SOLUTION


checks.check_permutation_test(paired_permutation_p)
# %% [markdown]
# ### 3.1 S_P against its control, every task
#
# `necessity_all` runs both steps on every task (teaching setting, five control seeds; the paper's setting folded).
# On a small model the control is coarse: against one of few MLPs it holds *another* MLP; with too few left, heads
# (see the `control` column).
#
# **Predict first.** On which tasks will S_P be necessary beyond its control (p < 0.05)?
# %%
# the task names where you expect p < 0.05 (any number of them, or none: set())
PREDICT_NECESSARY_TASKS = {"addition", "ioi"}  # LEARNER: None  # a set of task names
# %%
from tutorial_lib.methods.consistency import shared_sets
from tutorial_lib.studies.consistency import necessity_all
from tutorial_lib.viz.consistency import plot_necessity_tasks

shared = shared_sets(scores, K_TEACH, P_TEACH)  # the teaching setting
shared_paper = shared_sets(scores, K_MAIN, P_MAIN)  # the paper's
for name, circuit in shared.items():
    print(f"{name:16s} {circuit}")
necessity_results = necessity_all(model, tasks, shared, mode=ABLATION, seeds=SEEDS)
PAPER_SEEDS = range(sizes.pick("control seeds at the paper's setting", full=5, cpu=2, quick=1, model=model))
necessity_paper = necessity_all(model, tasks, shared_paper, mode=ABLATION, seeds=PAPER_SEEDS)
plot_necessity_tasks(necessity_results)
# %%
from IPython.display import HTML

necessity_table = pd.DataFrame({n: r.summary() for n, r in necessity_results.items()}).T.infer_objects()
display(necessity_table.round(4))
paper_table = pd.DataFrame({n: r.summary() for n, r in necessity_paper.items()}).T.infer_objects()
display(HTML(f"<details><summary>The same at the paper's setting (K = {K_MAIN:.0%}, P = {P_MAIN}, {len(PAPER_SEEDS)} control "
             "seed(s); click to open)</summary>"
             + paper_table.round(4).to_html() + "</details>"))
passed_tasks = {n for n, r in necessity_results.items() if r.excess > 0 and r.p_value < 0.05}
passed_paper = {n for n, r in necessity_paper.items() if r.excess > 0 and r.p_value < 0.05}
from tutorial_lib.studies.consistency import necessity_unsure

reading.predicted(PREDICT_NECESSARY_TASKS, passed_tasks, "the tasks whose S_P is necessary beyond its control",
                  unsure=necessity_unsure(necessity_results))
reading.see("Accuracy drop, S_P (heads + MLPs) vs control: "
            + "; ".join(f"{n} ({len(r.circuit.heads)}+{len(r.circuit.mlps)}) {float(r.circuit_drop.mean()):.2f} vs {r.random_drop:.2f} "
                        f"(p = {r.p_value:.2g})" for n, r in necessity_results.items())
            + f". Necessary on {len(passed_tasks)} of {len(tasks)} tasks, {len(passed_paper)} at the paper's setting."
            + (" A control dropping 0 makes S_P's whole drop the excess." if any(r.random_drop == 0 for r in necessity_results.values()) else ""),
            paper="ablating the shared set caused much larger accuracy drops than the capacity control; on addition excess "
                  "drops of 0.8–1.0.", model=model)
# %% [markdown]
# **Paper:** S_P's drop far exceeded the control's; on addition, excess drops of 0.8-1.0.
#
# **Claim** (teaching setting): on every performed task, ablating S_P hurts more than its control, p < 0.05; it fails
# on a task with p ≥ 0.05. Without room to type-match the control it is *not testable*, not passed on a weaker control.
# %%
from tutorial_lib.studies.consistency_claims import necessity_claim

for name in performed:
    check(*necessity_claim(model, name, necessity_results[name]).as_args())
weaker = [n for n in performed if not necessity_results[n].type_matched]
print(f"checked: is S_P necessary beyond a size-matched control (p < 0.05) on every performed task {performed}? "
      + (f"Weaker than the paper's test on {weaker}: their controls could not keep the head/MLP counts." if weaker
         else "Every control was type-matched, as in the paper."))
# %% [markdown]
# Tasks below the bar, if any (the older `zoo-multitask` has one): done by shortcuts, they tend to share less and to
# need their S_P no more than a random set.
# %%
partial = [name for name in tasks if name not in performed]
if partial:
    display(pd.DataFrame({"clean accuracy": {n: clean_accuracy[n] for n in partial},
                          "reuse margin over random": {n: float(reuse_table.loc[n, "reuse@P"] - reuse_table.loc[n, "random reuse@P"]) for n in partial},
                          "S_P drop": {n: float(necessity_results[n].circuit_drop.mean()) for n in partial},
                          "control drop": {n: float(necessity_results[n].random_drop) for n in partial},
                          "p-value": {n: necessity_results[n].p_value for n in partial}}).round(3))
    reading.see("Below the bar (reuse margin over random; S_P against its control): " + "; ".join(
        f"{n} ({clean_accuracy[n]:.0%}): {float(reuse_table.loc[n, 'reuse@P'] - reuse_table.loc[n, 'random reuse@P']):.2f}, "
        f"{'necessary' if n in passed_tasks else 'not necessary'} (p = {necessity_results[n].p_value:.2g})" for n in partial)
        + ". These measures describe tasks a model has learned.")
else:
    reading.see(f"No task is below the bar (lowest: {min(clean_accuracy, key=clean_accuracy.get)} "
                f"{min(clean_accuracy.values()):.0%}): nothing to contrast.")
# %% [markdown]
# ### 3.2 How to read a necessity result
#
# * The **excess** drop (S_P minus control) is the necessity score; the **ratio** is infinite when the control drops 0.
# * p < 0.05: not chance *for these examples and draws*; not that S_P is *sufficient*, nor the task's own (section 4).
# * S_P no more necessary? Look at the control first: a task needing two MLPs loses as much with either.
#
# ### 3.3 Zero, mean or resample?
#
# Zero ablation sets an output to a value it never takes. **Mean** ablation uses its mean over the task's prompts;
# **resample**, its value on another prompt. A large *control* drop is the ablation's shock, not the task.
# %%
from tutorial_lib.core.circuits import ABLATION_MODES
from tutorial_lib.viz.consistency import plot_excess_by_mode

MODE_SEEDS = range(sizes.pick("control seeds per extra ablation mode", full=3, cpu=2, quick=1, model=model))
by_mode = {mode: necessity_results if mode == ABLATION else necessity_all(model, tasks, shared, mode=mode, seeds=MODE_SEEDS)
           for mode in ABLATION_MODES}
plot_excess_by_mode(by_mode)
# %%
from tutorial_lib.viz.consistency import necessity_by_mode_table

display(necessity_by_mode_table(by_mode).round(3))
mode_pass = {m: [n for n in performed if res[n].excess > 0 and res[n].p_value < 0.05] for m, res in by_mode.items()}
reading.see("S_P necessary beyond its control: " + "; ".join(f"{m} {len(v)} of {len(performed)}" for m, v in mode_pass.items())
            + ". Largest control drop (the ablation's shock): "
            + "; ".join(f"{m} {max(res[n].random_drop for n in tasks):.2f}" for m, res in by_mode.items()) + ".")
# %%
from tutorial_lib.course.record import record
from tutorial_lib.studies.consistency import readme_figures

_ = record("02", **readme_figures(model, clean_accuracy, reuse_table, shared, necessity_results, mode_pass, performed,
                                  N_EXAMPLES, K_TEACH, P_TEACH,  # the figures the README quotes, from this run
                                  setting=f"notebook 02's teaching setting; at the paper's K = {K_MAIN:.0%}, P = {P_MAIN} the performed "
                                          f"tasks' median S_P has {reuse_paper.loc[performed or list(tasks), '|S_P|'].median():g} component(s)"))
# %% [markdown]
# ### 3.4 Which conclusions flip?
#
# Both claims, pass or fail, per metric, K, P and ablation (folded table). Cells off the two settings use one control
# seed: near p = 0.05, trust more seeds.
# %%
from tutorial_lib.studies.consistency import flip_table

if performed:  # (a model that performs no task has no claim to flip)
    OTHER_METRIC = "answer_logprob" if METRIC == "logit_diff" else "logit_diff"
    scores_other = eap_for_tasks(model, tasks, metric=OTHER_METRIC, batch_size=64)
    n_ps = sizes.pick("P values in the flip table", full=4, cpu=2, quick=1, model=model)
    by_metric = {METRIC: scores, OTHER_METRIC: scores_other}
    FLIP_PS = sorted({P_TEACH, *(100, 95, 90, 75)[:n_ps]}, reverse=True)
    flips = flip_table(model, tasks, by_metric, performed, K_TEACH, FLIP_PS, seeds=(0,), known=by_mode)
    if (K_MAIN, P_MAIN) != (K_TEACH, P_TEACH):  # the paper's setting too, with section 3's results at it
        flips = pd.concat([flip_table(model, tasks, by_metric, performed, K_MAIN, [P_MAIN], seeds=(0,),
                                      known={ABLATION: necessity_paper}), flips])
    display(HTML(f"<details><summary>The flip table: {len(flips)} rows (metric × K × P) × {len(flips.columns)} columns "
                 "(click to open)</summary>" + flips.to_html() + "</details>"))
    cons_col = [c for c in flips.columns if c.startswith("consistent")][0]
    nec_cols = [c for c in flips.columns if c.startswith("necessary")]
    n_nec = sum(flips[c].str.startswith("pass").sum() for c in nec_cols)
    main_cell = flips.loc[(METRIC, f"{K_TEACH:.0%}", P_TEACH), f"necessary ({ABLATION})"]
    reading.see(f"Consistency passes in {(flips[cons_col] == 'pass').sum()} of {len(flips)} rows (metric × K × P), at P = "
                + (", ".join(str(p) for p in sorted({p for (_, _, p), v in flips[cons_col].items() if v == 'pass'}, reverse=True)) or "none")
                + f"; necessity in {n_nec} of {len(flips) * len(nec_cols)} cells (× mode), changing with the mode in "
                + f"{sum(len({v.split(',')[0] for v in row[nec_cols]}) > 1 for _, row in flips.iterrows())} of {len(flips)} rows. "
                + f"The teaching {ABLATION}-ablation cell, \"{main_cell}\", is section 3.1's "
                + f"({len(passed_tasks & set(performed))} of {len(performed)} pass).")
    claim(main_cell.startswith("pass") == all(n in passed_tasks for n in performed),
          f"the flip table's main cell ({main_cell}) disagrees with section 3.1 ({sorted(passed_tasks)} pass)",
          name="02.flip-table-agrees")
else:
    reading.see("The model performs none of the tasks, so there is no claim to flip.")
# %% [markdown]
# ## 4. Specificity (~35 min)
#
# Three measures compare the tasks' shared sets (teaching setting); identical or empty ones would fix the outcome, so
# the cell below checks.
# %%
from tutorial_lib.studies.consistency import specificity_degenerate

degenerate = specificity_degenerate(shared)
degenerate_paper = specificity_degenerate(shared_paper)
print(f"teaching setting (K = {K_TEACH:.0%}, P = {P_TEACH}): " + (f"degenerate: {degenerate}" if degenerate else "the shared sets differ")
      + f"\npaper's setting (K = {K_MAIN:.0%}, P = {P_MAIN}): " + (f"degenerate: {degenerate_paper}" if degenerate_paper else "the shared sets differ"))
SKIPPED = f"This section's conclusions are skipped here: {degenerate}." if degenerate else ""
# %% [markdown]
# ### 4.1 The cross-task ablation matrix
#
# Each task's S_P is ablated (rows) and every task measured (columns), with a control's drop per cell. Specific
# circuits give a red diagonal (red: accuracy lost) and white elsewhere.
#
# **Exercise 8.** Write `cross_task_row(model, tasks, circuit)`: one row of the matrix. Zero-ablate `circuit` (a list
# of names) and return `{task name: clean accuracy − ablated accuracy}` for every task of `tasks`.
# `ablation_hooks(model, circuit, "zero")` (from `tutorial_lib.core.circuits`) gives the hooks; `task.accuracy(logits)`
# is 1 per example the model gets right.
#
# <details><summary>Hint</summary>
#
# For each task: `task.accuracy(model(task.clean)).mean()` under `torch.no_grad()`, once plainly and once inside
# `with model.hooks(fwd_hooks=ablation_hooks(model, circuit, "zero")):`.
# </details>
# %%
from tutorial_lib.core.circuits import ablation_hooks


def cross_task_row(model, tasks, circuit):
    # BEGIN SOLUTION: for each task: accuracy without and with the circuit zero-ablated (model.hooks + ablation_hooks); the drop is clean minus ablated
    row = {}
    with torch.no_grad():
        for name, task in tasks.items():
            clean = task.accuracy(model(task.clean)).mean().item()
            with model.hooks(fwd_hooks=ablation_hooks(model, circuit, "zero")):
                ablated = task.accuracy(model(task.clean)).mean().item()
            row[name] = clean - ablated
    return row
    # END SOLUTION


checks.check_cross_task_row(cross_task_row, model, tasks, sorted(shared["ioi"].nodes) or ["m0"])
# %%
from tutorial_lib.methods.consistency import cross_task_matrix
from tutorial_lib.viz.consistency import plot_cross_task

cross = cross_task_matrix(model, tasks, shared, mode=ABLATION, control_seeds=(0,))
plot_cross_task(cross).show()
names = cross.names
diag = {n: float(cross.drop[i, i]) for i, n in enumerate(names)}
off = {n: float((cross.drop[:, j].sum() - cross.drop[j, j]) / (len(names) - 1)) for j, n in enumerate(names)}
reading.see(SKIPPED or ("Drop from own S_P vs others' mean: " + "; ".join(f"{n} {diag[n]:.2f} vs {off[n]:.2f}" for n in names)
            + f" ({sum(diag[n] > off[n] + 0.05 for n in performed)} of {len(performed)} performed over 0.05). "
              "Controls: **one** seed per cell (section 3: five), e.g. " + "; ".join(
              f"{n} {float(cross.random_drop[i, i]):.2f} vs {necessity_results[n].random_drop:.2f}" for i, n in enumerate(names[:2]))
            + ": trust section 3's."))
# %% [markdown]
# Own-S_P drop minus the others' mean (near zero or below: not specific):
# %%
specificity = cross.specificity()
bar(list(specificity), list(specificity.values()), title="Own-circuit drop minus mean other-circuit drop (grey: not performed)",
    y_title="accuracy drop difference", x_title="target task",
    colors=["steelblue" if n in performed else "lightgrey" for n in specificity]).show()
reading.see(SKIPPED or ("Own minus others' drop: " + ", ".join(f"{n} {v:+.2f}" for n, v in specificity.items())
            + f"; {sum(v > 0.05 for v in specificity.values())} of {len(specificity)} over 0.05. Near zero: not specific."),
            paper="ablating another task's circuit hurt about as much as the task's own.", model=model)
# %% [markdown]
# **Paper:** other tasks' circuits hurt about as much as a task's own (Llama-3.2-3B addition: 99% either way).
#
# ### 4.2 Overlap: Jaccard against chance
#
# Jaccard overlap: |A ∩ B| / |A ∪ B| ([glossary](00_start_here.ipynb#glossary)). Chance (in brackets): the mean
# overlap of random sets with the same numbers of heads and MLPs, high on a model with few MLPs.
#
# **Exercise 9.** Write `jaccard_vs_chance(a, b, heads, mlps, n_random, seed)`: `a`, `b` are sets of names; `heads`,
# `mlps` list the model's. Return `(observed, chance)`: the Jaccard overlap of `a` and `b`, and its mean over
# `n_random` pairs of random sets with as many heads and MLPs as `a` (resp. `b`), drawn with
# `np.random.default_rng(seed)`. (The course's: `tutorial_lib.core.circuits.jaccard`.)
#
# <details><summary>Hint</summary>
#
# A helper `draw(s)` that picks `sum(c in heads for c in s)` heads and `sum(c in mlps for c in s)` MLPs with
# `rng.choice(..., replace=False)`; the Jaccard overlap is `len(x & y) / len(x | y)`.
# </details>
# %%
def jaccard_vs_chance(a, b, heads, mlps, n_random, seed):
    # BEGIN SOLUTION: observed |A ∩ B| / |A ∪ B|; chance = mean over random pairs with A's and B's numbers of heads and of MLPs
    rng = np.random.default_rng(seed)

    def overlap(x, y):
        return len(x & y) / len(x | y) if x | y else 1.0

    def draw(s):
        n_h, n_m = sum(c in heads for c in s), sum(c in mlps for c in s)
        return {str(c) for c in rng.choice(heads, n_h, replace=False)} | {str(c) for c in rng.choice(mlps, n_m, replace=False)}

    return overlap(set(a), set(b)), float(np.mean([overlap(draw(a), draw(b)) for _ in range(n_random)]))
    # END SOLUTION


checks.check_jaccard(jaccard_vs_chance, model)
# %%
from tutorial_lib.methods.consistency import jaccard_matrix
from tutorial_lib.viz.consistency import plot_jaccard

jaccard = jaccard_matrix(model, shared, n_random=500, seed=0)
plot_jaccard(jaccard).show()
iu = torch.triu_indices(len(jaccard.names), len(jaccard.names), 1)
obs, rnd = jaccard.observed[iu[0], iu[1]], jaccard.random_mean[iu[0], iu[1]]
reading.see(SKIPPED or (f"Jaccard over {len(obs)} task pairs: {obs.min():.2f}–{obs.max():.2f} (mean {obs.mean():.2f}); chance "
            f"{rnd.mean():.2f}: " + ("more than chance." if obs.mean() > rnd.mean() else "no more than chance.")),
            paper="0.46–0.89 between pairs of tasks, against about 5% for random circuits.", model=model)
# %% [markdown]
# **Paper:** Jaccard 0.46-0.89 between tasks, about 5% by chance; MLPs made up most of the shared core.
#
# ### 4.3 Shared core, task-specific and complementary parts
#
# Split two tasks' S_A and S_B into the **shared core** S_A ∩ S_B, **task-specific** S_A − S_B and **complementary**
# S_B − S_A; ablate each and measure both tasks (hatched: controls).
# %%
from tutorial_lib.methods.consistency import decompose
from tutorial_lib.viz.consistency import plot_decomposition

A = "ioi"
B = next(t for t in ("greater_than", "multiple_choice", "addition") if t in tasks)  # greater-than needs GPT-2's years
parts = decompose(model, tasks[A], tasks[B], shared[A], shared[B], mode=ABLATION, names=(A, B))
plot_decomposition(parts).show()
reading.see(SKIPPED or ("Drops (control): " + "; ".join(f"{k} ({len(parts.sets[k])})"
                                        + (f": {A} {parts.drop[k][A]:.2f} ({parts.random_drop[k][A]:.2f}), {B} {parts.drop[k][B]:.2f} "
                                           f"({parts.random_drop[k][B]:.2f})" if len(parts.sets[k]) else "")
                                        for k in parts.sets) + ". A control dropping 0 draws no bar."),
            paper="task-specific components exist (15–30% of a circuit at K = 10%), but ablating them costs little next to the "
                  "shared core.", model=model)
# %% [markdown]
# **Paper:** task-specific components exist (15-30% of a circuit at K = 10%) but cost little next to the shared core.
#
# ## 5. Composition (~10 min)
# %%
from tutorial_lib.methods.consistency import composition
from tutorial_lib.viz.consistency import plot_composition_tasks

compositions = {name: composition(s, KS) for name, s in scores.items()}
compositions_mean = {name: composition(s, KS) for name, s in scores_mean.items()}
plot_composition_tasks(compositions, title="What per-example circuits are made of as K grows (sum node score)").show()
k_i = list(KS).index(K_MAIN)
share = lambda comp, f: sum(f(c) for c in comp.values()) / len(comp)  # noqa: E731  (mean over the tasks)
mlp_sum, mlp_mean = share(compositions, lambda c: float(c.mlp_share[k_i])), share(compositions_mean, lambda c: float(c.mlp_share[k_i]))
l0_sum, l0_mean = share(compositions, lambda c: float(c.layer_share[k_i, 0])), share(compositions_mean, lambda c: float(c.layer_share[k_i, 0]))
last_sum = share(compositions, lambda c: float(c.layer_share[k_i, -1]))
last_mean = share(compositions_mean, lambda c: float(c.layer_share[k_i, -1]))
out_edges = [int(graph.edge_mask()[graph.senders.index(f"m{l}")].sum()) if f"m{l}" in graph.senders else 0 for l in range(model.cfg.n_layers)]
reading.see(f"At K = {K_MAIN:.0%} (task mean), sum score: MLPs {mlp_sum:.0%}, layer 0 {l0_sum:.0%}, last layer {last_sum:.0%}; "
            f"mean-edge: MLPs {mlp_mean:.0%}, layer 0 {l0_mean:.0%}, last layer {last_mean:.0%}. Random: MLPs "
            f"{n_mlps / n_components:.0%} ({n_mlps} of {n_components}), each layer {1 / model.cfg.n_layers:.0%}. A layer-0 MLP has "
            f"{out_edges[0]} outgoing edges, a last-layer one {out_edges[-1]}, so the sum favours early layers; "
            + ("mean-edge moves circuits late." if last_mean > last_sum + 0.1 else
               "mean-edge barely moves them." if abs(last_mean - last_sum) <= 0.1 else "mean-edge moves them earlier."),
            paper="small circuits are almost all MLP layers (95–100% on Gemma 2 2B-IT at K ≤ 10%).", model=model)
# %% [markdown]
# **Paper:** small circuits are 95-100% MLPs (Gemma 2 2B-IT, K ≤ 10%), heads common from K ≈ 20%; on Llama and Qwen,
# in early layers. Mind the base rate (GPT-2 small: 12 MLPs of 156 components). A finding under both node scores is
# sturdier.
#
# ## 6. The ablation panel (~10 min)
#
# Switch heads and MLPs off (zero ablation) and watch every task's accuracy; the presets ablate each task's S_P. Which
# components do all tasks need? Does one only a single task need?
# %%
from tutorial_lib.viz.consistency import consistency_panel

panel = consistency_panel(model, tasks, shared, mode=ABLATION)
panel
# %% [markdown]
# The panel from code:
# %%
from tutorial_lib.core.circuits import Circuit
from tutorial_lib.methods.consistency import matched_control

every_shared = sorted(set().union(*(c.nodes for c in shared.values())))  # every task's S_P at once
after = panel.set_ablated(every_shared)["metrics"]
print({k: round(v, 2) for k, v in after.items()}, "with", every_shared, "ablated")
controls_union = [matched_control(model, Circuit(every_shared), seed=s) for s in range(3)]
after_control = [r["metrics"] for r in panel.evaluate.many([c.nodes for c in controls_union])]  # the panel's readout, 3 at once
on = performed or list(tasks)
drop_union = sum(panel.baseline["metrics"][n] - after[n] for n in on) / len(on)
drop_control = sum(panel.baseline["metrics"][n] - a[n] for a in after_control for n in on) / (len(on) * len(after_control))
print(f"mean accuracy drop over {on}: {drop_union:.3f} with the union of the S_P ablated, {drop_control:.3f} with a "
      f"size-matched control of it ({controls_union[0].meta.get('match', '?')}; 3 seeds)")
from tutorial_lib.core.controls import is_type_matched, possible_draws
from tutorial_lib.methods.power import Power, enough_draws

_ = check("02.panel-union-beats-control", f"ablating every task's S_P ({len(every_shared)} components) costs the performed "
          f"tasks {drop_union:.3f} on average, more than a size-matched control of it ({drop_control:.3f})",
          drop_union > drop_control,
          [enough_draws(possible_draws(model, every_shared, "type"), what="type-matched controls of the union"),
           Power(all(is_type_matched(c) for c in controls_union), f"the controls drawn: {controls_union[0].meta.get('match')}")])
_ = panel.set_ablated([])
in_all = sorted(set.intersection(*(set(c.nodes) for c in shared.values())))
own = {c: n for n, f in freq.items() for c, v in zip(scores[n].components, f.tolist())
       if v >= 0.5 and all(freq[m][scores[m].components.index(c)] < 0.1 for m in freq if m != n)}
reading.answer("Which components do all tasks need? Is there one that only a single task needs?",
               f"In every task's S_P: {', '.join(in_all) or 'no component'}" + (f" — with {'it' if len(in_all) == 1 else 'them'} ablated the "
               "accuracy is " + ", ".join(f"{n} {v:.2f}" for n, v in panel.set_ablated(in_all)['metrics'].items()) + " (clean: "
               + ", ".join(f"{n} {clean_accuracy[n]:.2f}" for n in tasks) + ")" if in_all else "")
               + ". In at least half of one task's per-example circuits and in under 10% of every other task's: "
               + (", ".join(f"{c} ({n})" for c, n in own.items()) if own else "none at K = 10%; look for columns dark in one row only "
                  "in the membership heatmap of section 1.4 at a larger K") + ".")
_ = panel.set_ablated([])
# %% [markdown]
# ## 7. What this tells us (~5 min)
#
# All you measured, at the teaching setting:
# %%
from tutorial_lib.viz.consistency import summary_table

summary_table(sweeps, necessity_results, cross, jaccard, K_TEACH, P_TEACH).round(4)
# %% [markdown]
# **The paper concludes**: consistent and necessary, but *not specific*; at the level of whole heads and MLPs a "task
# circuit" is mostly general infrastructure plus a small task-specific part.
#
# **Your model.** Compare each column with its baseline (random reuse@P, 0, the others' drop, chance Jaccard): which
# conclusions hold, and which cannot be told from chance on a model this small?
#
# **What none of this shows.**
# * That the shared components *compute* the task: necessity is not sufficiency; EAP is a linear estimate (1.2).
# * That a component every task needs holds nothing task-specific: an MLP can hold task-specific *features*.
# * Anything about GPT-2 or the paper's models, from the zoo model. Online, set `MODEL_NAME = "gpt2"` and re-run.
# * Robustness: change `METRIC`, `ABLATION`, `K_TEACH`/`P_TEACH` or the node score (`scores_mean`), and re-run.
# %% [markdown]
# ### The claims of this notebook
# %%
from tutorial_lib.course import claims

claims.summary("02", record_as="02", model=model)
