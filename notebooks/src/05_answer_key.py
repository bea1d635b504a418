# %% [markdown]
# # 05 · An answer key: do the methods find the circuit that is really there?
#
# Notebooks 01–04 find circuits in trained models whose true circuit nobody knows, so methods could only be
# compared with each other (notebook 04's agreement and faithfulness). The field's answer to "do these methods find
# the *real* circuit?" is a model whose circuit is known **by construction**: tracr-compiled programs (auto-circuit
# scores edge recovery against them by ROC) and InterpBench's semi-synthetic transformers (Gupta et al. 2024: TPR
# and FPR over a sweep of circuit sizes, and the area under that ROC curve, AUROC). Here we build two such models
# ourselves, by writing every weight by hand into a TransformerLens `HookedTransformer`:
#
# * **induction**: a previous-token head in layer 0 and an induction head in layer 1 that reads it through
#   K-composition (its *keys* read what the earlier head wrote), on repeated random tokens;
# * **successor**: a head that moves a number to the last position and an MLP that looks up its successor
#   (n → n + 1), a head → MLP edge as in greater-than;
#
# each surrounded by **distractors**: heads and MLPs with weights of the same scale that do real work on other
# tokens, several of them changing between clean and corrupted prompts.
#
# **Learning objectives**: by the end of this notebook you can
# 1. read a head's job off its weights (QK and OV circuits) and write a previous-token head by hand;
# 2. check a circuit by construction: ablations of the circuit, of each distractor, of random sets, of each edge;
# 3. compute a ROC curve and its AUROC from a method's ranking, ties included, and read precision at the true size;
# 4. say why a method missed an edge: nothing to patch, a gradient that misses it, or a rank below the cut;
# 5. say which conclusions flip with the ablation, the metric and the corruption.
#
# | section | time | exercise |
# | --- | --- | --- |
# | 0. Setup: the two answer keys | 3 min | |
# | 1. Look at the weights | 15 min | 1: a previous-token head by hand (easy, 10 min) |
# | 2. Checked by construction | 10 min | |
# | 3. Predict, then score every method | 25 min | 2: ROC and AUROC from a ranking (medium, 15 min) |
# | 4. Why a method missed an edge | 15 min | 3: classify the misses (medium, 10 min) |
# | 5. Which conclusions flip | 10 min | |
# | 6. What this tells us, and what it doesn't | 5 min | |
#
# *Which numbers are whose.* InterpBench's and auto-circuit's findings are quoted below, marked **paper**. Every
# other number is measured here, on these two hand-built models (they do not depend on the model notebook 00
# loads, and nothing is downloaded).
# %% [markdown]
# ## 0. Setup: the two answer keys (~3 min)
# %% tags=course-install
from tutorial_lib import setup

env = setup(seed=0)
# %%
import time

import pandas as pd
import torch

from tutorial_lib.course import checks, reading
from tutorial_lib.zoo.answer_key import induction_key, successor_key

torch.set_num_threads(1)  # the models are tiny: more threads only add overhead
reading.subject("the answer-key models built here")  # every reading below is about them, whatever model is loaded
pd.set_option("display.width", 200)
pd.set_option("display.max_columns", 12)
SEED = 0
N_EXAMPLES = 32
keys = {"induction": induction_key(seed=SEED), "successor": successor_key(seed=SEED)}
tasks = {name: key.task(N_EXAMPLES, seed=SEED) for name, key in keys.items()}
for name, key in keys.items():
    t = tasks[name]
    with torch.no_grad():
        clean, corrupt = t.metric(key.model(t.clean)).mean().item(), t.metric(key.model(t.corrupt)).mean().item()
    print(f"{key}\n  clean prompt:     {t.prompts[0]}  -> answer t{int(t.answers[0])}\n"
          f"  corrupted prompt: {t.corrupt_prompts[0]}  -> wrong t{int(t.wrong[0, 0])}\n"
          f"  logit difference: clean {clean:.2f}, corrupted {corrupt:.2f}; residual layout: "
          + ", ".join(f"{k} {v.stop - v.start}" for k, v in key.layout.items()) + f" of {key.model.cfg.d_model}")
pd.DataFrame([{"key": n, "component": c, "in the circuit": c in k.circuit.nodes, "what it does": r}
              for n, k in keys.items() for c, r in k.roles.items()]).set_index(["key", "component"])
# %% [markdown]
# ## 1. Look at the weights (~15 min)
#
# Every weight was written by hand (`tutorial_lib/zoo/answer_key.py`), then Gaussian noise of standard deviation
# 0.02 was added to all of them so that no two scores tie by accident. The residual stream is split into named
# blocks: the token one-hot, the position one-hot, and one block per thing a head or an MLP writes. A head's
# **QK circuit** ($x_q W_Q W_K^\top x_k^\top$) says where it attends, its **OV circuit** ($x W_V W_O$) what it
# writes. First the attention of the circuit's heads on one prompt:
# %%
from tutorial_lib.viz.answer_key import plot_patterns, plot_weight_circuits

for name in keys:
    plot_patterns(keys[name], tasks[name]).show()
# %% [markdown]
# And the weights behind them. For the induction key: `a0.h0`'s QK circuit over positions (query position i
# matches key position i − 1: a diagonal shifted by one), and `a1.h0`'s QK circuit read *through* `a0.h0`'s OV
# circuit — the current token against the token before each key — which is K-composition made visible: a
# diagonal. For the successor key: `a0.h0`'s QK circuit over tokens (only the marker's row is lit, on the numbers)
# and what `a0.h0`'s OV followed by `m1` writes on the numbers' logits (n → n + 1, the last number wrapping to the
# first: a diagonal shifted by one).
# %%
for name in keys:
    plot_weight_circuits(keys[name]).show()
# %%
from tutorial_lib.tasks.induction import previous_token_attention

prev_att = previous_token_attention(keys["induction"].model, tasks["induction"].clean)
reading.see(f"`a0.h0` puts {prev_att[0, 0]:.2f} of its attention on the previous token (the other heads of layer 0 at "
            f"most {prev_att[0, 1:].max():.2f}; layer 1's distractor `a1.h1`, built the same way, {prev_att[1, 1]:.2f}). A head's job is a pattern in its weights, not in its name: `a1.h1` attends like a "
            "previous-token head and does other work.")
# %% [markdown]
# **Exercise 1 — a previous-token head by hand.** Write `set_previous_token(model, layer, head, pos)`: set the
# head's `W_Q` and `W_K` (shape `[d_model, d_head]` each: `model.blocks[layer].attn.W_Q[head]`) so that every
# position attends to the one before it. `pos` is the `slice` of the residual stream that holds the position
# one-hot (position p is dimension `pos.start + p`). The model has no attention scaling (`use_attn_scale=False`),
# so the score is exactly $x_q W_Q W_K^\top x_k^\top$; a match should score about 12 above the rest. Use
# `torch.no_grad()`.
#
# The check zeroes `a0.h0`'s QK in a fresh induction key, calls your function, and requires ≥ 0.9
# of the attention one back and the task working again.
#
# <details><summary>Hint</summary>Give position p one head dimension: the query of position p writes 12 into
# dimension p, the key of position p − 1 writes 1 into the same dimension p (so the key row of position j is
# dimension j + 1). Stop at <code>d_head</code>.</details>
# %%
def set_previous_token(model, layer, head, pos):
    # BEGIN SOLUTION: query of position p -> 12 * e_p, key of position j -> e_(j+1), in the head's dimensions
    attn = model.blocks[layer].attn
    n, d_head = pos.stop - pos.start, attn.W_Q.shape[-1]
    with torch.no_grad():
        attn.W_Q[head, pos] = 0
        attn.W_K[head, pos] = 0
        for p in range(min(n, d_head)):
            attn.W_Q[head, pos.start + p, p] = 12.0
            if p + 1 < d_head:
                attn.W_K[head, pos.start + p, p + 1] = 1.0
    # END SOLUTION


checks.check_previous_token_head(set_previous_token)
# %% [markdown]
# ## 2. Checked by construction, not by hope (~10 min)
#
# A ground-truth circuit is only an answer key if the model really uses it and nothing else for the task. Four
# checks, each with the course's one definition of ablation (`core.circuits`: **zero**, **mean** over the batch,
# **resample**: another prompt's value) and its one size-matched control (`core.controls.size_matched_random`):
#
# 1. ablating the circuit's nodes destroys the task (logit difference below 20% of the clean one);
# 2. ablating each distractor alone, and each of 20 random sets of distractors of the circuit's size (as many heads
#    and MLPs), keeps at least 80% of it;
# 3. every ground-truth edge, cut alone (`methods.edge_ablation`: the receiver's input loses the sender's output and
#    gets the replacement instead), changes the metric by at least 5%.
# %%
from tutorial_lib.studies.answer_key import CHANGES, verify_key

t0 = time.perf_counter()
verified = {name: verify_key(keys[name], tasks[name]) for name in keys}
rows = []
for name, chk in verified.items():
    for mode in chk.circuit:
        worst = min(list(chk.distractors[mode].values()) + chk.random_sets[mode])
        rows.append({"key": name, "ablation": mode, "clean": round(chk.clean, 2), "circuit ablated": round(chk.circuit[mode], 2),
                     "worst distractor or random set": round(worst, 2),
                     "truth edges that matter (cut alone)": f"{len(chk.edges_that_matter(mode))} of {len(keys[name].circuit.edges)}"})
display(pd.DataFrame(rows).set_index(["key", "ablation"]))
edge_table = pd.DataFrame({(n, m): v for n, chk in verified.items() for m, v in chk.edges.items()}).round(2)
display(edge_table)
print(f"({time.perf_counter() - t0:.0f} s)")
# %%
from tutorial_lib.course.claims import check
from tutorial_lib.studies.answer_key_claims import construction_claims, eap_ig_claim, scoring_claims

for name, chk in verified.items():
    for spec in construction_claims(name, keys[name], chk):
        check(*spec.as_args())
ind, suc = verified["induction"], verified["successor"]
reading.see(f"Both keys pass: the circuit ablated leaves a logit difference of {ind.circuit['resample']:.2f} (induction) "
            f"and {suc.circuit['resample']:.2f} (successor) of {ind.clean:.2f} and {suc.clean:.2f} (resample); the "
            f"worst distractor set keeps {min(ind.random_sets['resample'] + list(ind.distractors['resample'].values())) / ind.clean:.0%} "
            f"and {min(suc.random_sets['resample'] + list(suc.distractors['resample'].values())) / suc.clean:.0%}. "
            f"The 20 random sets are only {ind.n_distinct_sets} and {suc.n_distinct_sets} distinct: few sets of that size "
            f"exist. Every edge matters cut to zero, but only {len(ind.edges_that_matter('corrupt'))} of "
            f"{len(keys['induction'].circuit.edges)} and {len(suc.edges_that_matter('corrupt'))} of "
            f"{len(keys['successor'].circuit.edges)} when given their *corrupted* value: remember that column.")
# %% [markdown]
# ## 3. Predict, then score every method (~25 min)
#
# Five methods rank the model's edges (110 here) or its nodes (heads and MLPs), all with the corrupted prompts as
# the counterfactual and the logit difference as the metric:
#
# * **path patching** — the |effect| of patching each sender, at every position, into each receiver alone
#   (notebook 01's engine, one sweep per receiver); a node's score is the signed sum over its outgoing edges; and, as one
#   point on the ROC plane, the circuit notebook 04's two-step search returns (threshold: 5% of the clean − corrupted
#   gap);
# * **EAP** and **EAP-IG** (5 steps) — notebooks 02 and 04; edges by |mean score|, nodes by |signed node score|
#   (every method's node score is the signed sum of its outgoing edges, ranked by its size);
# * **exact node patching** — each node patched alone from the corrupted run (nodes only);
# * **the spectral recipe's steps 2–3** (notebook 03, induction key only: its step 2 looks for previous-token and
#   induction *attention patterns*, which the successor key's mover head does not have) — heads scored by their
#   larger pattern score, MLPs 0; step 3 ablates the heads above 0.5 against layer-matched random heads.
#
# Beside recovery, the **faithfulness** f of each method's top edges at the true circuit's number of edges (notebook
# 04: run the model with every other edge cut to its corrupted value; f = (m(C) − m(∅)) / (m(M) − m(∅)), 1 for the
# whole model, 0 for the empty circuit), against 20 random rankings of the same size.
#
# **Predict before you run.** Which method recovers the induction key's *edges* best (highest AUROC)? And which of
# its 7 ground-truth edges can no method here see (path effect below 5% of the clean metric)? Use what you know
# about the construction: what is the same in the clean and the corrupted prompt?
# %%
PREDICT_BEST_EDGE_METHOD = "EAP-IG"  # LEARNER: None  # one of "path patching", "EAP", "EAP-IG"
PREDICT_INVISIBLE = {"embed->a0.h0.q", "embed->a0.h0.k"}  # LEARNER: None  # a set of edge names, e.g. {"embed->a1.h0.v"}
# %%
from tutorial_lib.studies.answer_key import EDGE_METHODS, score_key

t0 = time.perf_counter()
scores = {name: score_key(keys[name], tasks[name], ig_steps=5) for name in keys}
print(f"({time.perf_counter() - t0:.0f} s)")
sp = scores["induction"].spectral
print(f"spectral recipe on the induction key: step 2's candidate {sp['candidate']}; step 3: ablated together, logit "
      f"difference {sp['candidate_metric']:.2f}, layer-matched random heads {min(sp['control_metrics']):.2f} to "
      f"{max(sp['control_metrics']):.2f}")
table = pd.concat({name: s.table() for name, s in scores.items()}, names=["key"])
display(table)
for name, s in scores.items():
    fr = s.faithfulness["random"]
    print(f"{name}: faithfulness at the true size ({len(s.truth.edges)} edges): ground truth {s.faithfulness['ground truth']:.3f}, "
          f"random rankings mean {sum(fr) / len(fr):.3f} (max {max(fr):.3f}); path-patching search: {s.pp_nodes}")
# %%
from tutorial_lib.viz.answer_key import plot_roc

plot_roc(scores, "edges").show()
plot_roc(scores, "nodes").show()
pp = {n: s.pp_point["edges"] for n, s in scores.items()}
under = {n: [m for m in EDGE_METHODS if s.edge_roc[m].below(pp[n])] for n, s in scores.items()}
above_all = all(len(u) == len(EDGE_METHODS) for u in under.values())
reading.see("The star is the path-patching search's circuit, a set of nodes holding every edge among them: on edges it "
            "sits at " + " and ".join(f"TPR {t:.2f}, FPR {f:.2f} ({n})" for n, (f, t) in pp.items())
            + (", above every method's curve" if above_all else ", above the curves of "
               + "; ".join(f"{', '.join(u) or 'no method'} ({n})" for n, u in under.items()))
            + ". No ranking saw the positional edges: a node circuit takes them in with its nodes, it did not find them.")
from tutorial_lib.course.claims import check
from tutorial_lib.studies.answer_key_claims import scoring_claims

_ = check(*next(c for c in scoring_claims(scores) if c.name == "05.pp-above-curves").as_args())
# %%
ind_s = scores["induction"]
from tutorial_lib.studies.fair import RULE, tied_auroc

# the methods that the run cannot tell from the best AUROC, over the ranked edges
best = tied_auroc({m: ind_s.flat(m) for m in EDGE_METHODS}, ind_s.edge_truth())
invisible = {e for e, d in verified["induction"].edges["corrupt"].items() if abs(d) < CHANGES * verified["induction"].clean}
reading.predicted(PREDICT_BEST_EDGE_METHOD, best, "the best edge AUROC on the induction key", options=EDGE_METHODS,
                  why=f"(The rule: {RULE}. With {len(ind_s.truth.edges)} circuit edges to rank, these AUROCs lie "
                      "inside one interval.)" if len(best) > 1 else f"(The rule: {RULE}.)")
reading.predicted(PREDICT_INVISIBLE, invisible, "the induction edges no method can see",
                  why="The query of `a1.h0` matters only at the last position, whose token is the same in both prompts."
                  if "embed->a1.h0.q" in invisible else "")
eap_k = ind_s.ranks_of_truth("EAP")["a0.h0->a1.h0.k"]
reading.see(f"Edge AUROCs on the induction key: " + ", ".join(f"{m} {ind_s.edge_roc[m].auroc:.2f}" for m in EDGE_METHODS)
            + f"; on the successor key: " + ", ".join(f"{m} {scores['successor'].edge_roc[m].auroc:.2f}" for m in EDGE_METHODS)
            + f". {'Far from' if max(r.auroc for r in ind_s.edge_roc.values()) < 0.9 else 'Close to'} 1: {len(invisible)} of "
            f"the {len(ind_s.truth.edges)} induction edges score about 0 for every method. Nodes are "
            f"easier (node AUROC {min(r.auroc for r in ind_s.node_roc.values()):.2f}–{max(r.auroc for r in ind_s.node_roc.values()):.2f}). "
            f"EAP ranks the K-composition edge a0.h0→a1.h0.k at {eap_k:g} of {len(ind_s.edge_items())} (tied scores share their mid-rank), and its top "
            f"{len(ind_s.truth.edges)} edges keep f = {ind_s.faithfulness['EAP']:.2f} against EAP-IG's "
            f"{ind_s.faithfulness['EAP-IG']:.2f}.")
for spec in scoring_claims(scores):
    if spec.name != "05.pp-above-curves":  # checked with the ROC figure above
        check(*spec.as_args())
# %% [markdown]
# **Exercise 2 — ROC and AUROC from a ranking.** Write `roc_from_ranking(scores, truth)`: `scores` is a 1-D tensor
# (one score per edge), `truth` a boolean tensor (True on the circuit's edges). Rank by |score|, sweep the top-k set
# from empty to everything, and return `(fpr, tpr, auroc)`: two lists from (0, 0) to (1, 1), TPR = circuit items
# chosen / circuit items, FPR = other items chosen / other items, and the trapezoid area (`torch.trapezoid(tpr, fpr)`).
# Items with **equal** |score| must enter together (one point after the whole group): otherwise the order you broke
# the tie in would decide the AUROC.
#
# <details><summary>Hint</summary><code>key = scores.abs()</code>; sort descending; cumulative sums of
# <code>truth</code> and <code>~truth</code> along the sorted order; keep the points where the next key differs
# (and the last one); prepend 0.</details>
# %%
def roc_from_ranking(scores, truth):
    # BEGIN SOLUTION: sort |scores| descending, cumsum hits and misses, keep the last point of each tie group, prepend (0, 0)
    key = scores.abs().double()
    order = torch.argsort(key, descending=True, stable=True)
    key, hit = key[order], truth.bool()[order]
    tp, fp = hit.cumsum(0).double(), (~hit).cumsum(0).double()
    last = torch.ones(len(key), dtype=torch.bool)
    last[:-1] = key[1:] != key[:-1]
    tpr = [0.0] + (tp[last] / hit.sum()).tolist()
    fpr = [0.0] + (fp[last] / (~hit).sum()).tolist()
    return fpr, tpr, float(torch.trapezoid(torch.tensor(tpr), torch.tensor(fpr)))
    # END SOLUTION


checks.check_roc(roc_from_ranking)
mine = roc_from_ranking(ind_s.flat("EAP-IG"), ind_s.edge_truth())
print(f"your EAP-IG edge AUROC on the induction key: {mine[2]:.3f} (library: {ind_s.edge_roc['EAP-IG'].auroc:.3f})")
# %% [markdown]
# ## 4. Why a method missed an edge (~15 min)
#
# Each ground-truth edge's rank (1 = first of 110) in each method's ranking, with what explains it: the change of the
# metric when the edge is cut to zero, its path-patching effect (cut to its *corrupted* value), and the EAP and
# EAP-IG scores.
# %%
from tutorial_lib.studies.answer_key import REASONS, edge_facts

facts = {name: [edge_facts(scores[name], verified[name], f"{s}->{r}") for s, r in sorted(keys[name].circuit.edges)]
         for name in keys}
display(pd.concat({name: pd.DataFrame([{**f, **{f"rank ({m})": scores[name].ranks_of_truth(m)[f["edge"]] for m in EDGE_METHODS}}
                                       for f in facts[name]]).set_index("edge").drop(columns="clean metric").round(3)
                   for name in keys}, names=["key"]))
# %% [markdown]
# **Exercise 3 — classify the misses.** Write `why_missed(facts)` returning one of `REASONS`:
# `"no difference to patch"` (the path-patching effect is below 5% of `facts["clean metric"]` in size: the corrupted
# run gives the edge the same value as the clean run, so no method that patches in the corrupted run can see it,
# whatever cutting it to zero does), `"gradient misses it"` (path patching sees it, but |EAP| is under a third of
# |path patching|: the gradient at the clean point is flat where patching the whole way is not), or
# `"ranked below the cut"` (seen by both; only its rank kept it out).
#
# <details><summary>Hint</summary>Test the path-patching effect against <code>0.05 * abs(facts["clean metric"])</code>
# first, then compare <code>abs(facts["EAP"])</code> with <code>abs(facts["path patching"]) / 3</code>.</details>
# %%
def why_missed(facts):
    # BEGIN SOLUTION: path patching ~0 -> nothing to patch; |EAP| < |path patching| / 3 -> gradient; else ranked below the cut
    if abs(facts["path patching"]) < 0.05 * abs(facts["clean metric"]):
        return "no difference to patch"
    if abs(facts["EAP"]) < abs(facts["path patching"]) / 3:
        return "gradient misses it"
    return "ranked below the cut"
    # END SOLUTION


checks.check_why_missed(why_missed, facts["induction"] + facts["successor"])
# %%
from tutorial_lib.studies.answer_key import induction_data
from tutorial_lib.tasks.induction import induction_attention

why = {name: {f["edge"]: why_missed(f) for f in facts[name]} for name in keys}
sat = induction_attention(keys["induction"].model, induction_data(tasks["induction"]))[1, 0]
counts = {name: {r: sum(v == r for v in why[name].values()) for r in REASONS} for name in keys}
grad = [e for e, r in why["induction"].items() if r == REASONS[1]]
reading.see(f"Induction key: {counts['induction'][REASONS[0]]} edges have no difference to patch, "
            f"{counts['induction'][REASONS[1]]} are missed by EAP's gradient ({', '.join(grad) or 'none'}); successor key: "
            f"{counts['successor'][REASONS[0]]} and {counts['successor'][REASONS[1]]}. `a1.h0` puts {sat:.3f} of its attention "
            "on one key: saturated, so moving its key input a little changes almost nothing, and "
            "the gradient is near 0, while patching the key moves the attention to another position. EAP-IG walks "
            "from the corrupted to the clean input and passes where the softmax is not flat.")
_ = check(*eap_ig_claim(ind_s, grad).as_args())
# %% [markdown]
# ## 5. Which conclusions flip (~10 min)
#
# The conclusions above rest on three choices: the **ablation** of the construction checks (resample; here zero and
# mean too), the **metric** (logit difference; here the answer's log-probability, which the distractors can move
# through the softmax's normaliser since they write other tokens' logits), and the **corruption** (the prompts built
# with the task; here another prompt of the batch, as resample ablation does). One choice changed per row; the methods'
# AUROCs are recomputed where the change reaches them (metric, corruption).
# %%
from tutorial_lib.studies.answer_key import flip_table

t0 = time.perf_counter()
flips = pd.concat({name: flip_table(keys[name], tasks[name], scores[name], verified[name]) for name in keys}, names=["key"])
display(flips)
print(f"({time.perf_counter() - t0:.0f} s)")
# %%
n_flip = {c: int(flips[c].groupby(level="key").nunique().gt(1).sum()) for c in flips.columns}
lp = flips.xs("metric: log p(answer)", level="setting")
reading.see(f"Across the {len(flips)} rows the circuit destroys the task in {(flips['circuit destroys the task'] == 'yes').sum()}, "
            f"and the distractors are harmless in {(flips['distractors harmless'] == 'yes').sum()}: with log p(answer) as "
            f"the metric they are harmful on {', '.join(lp.index[lp['distractors harmless'] == 'no']) or 'neither key'}, "
            f"because they move the softmax's normaliser. The number of ground-truth edges that matter changes with the "
            f"setting on {n_flip['truth edges that matter']} of {len(keys)} keys, and the best method at edges on "
            f"{n_flip['best at edges']} of {len(keys)}.")
# %% [markdown]
# ## 6. What this tells us, and what it doesn't (~5 min)
#
# * On a model where the answer is known, every method here finds the circuit's **nodes**, and none finds all its
#   **edges**: the edges that only route positions or flags are the same in the clean and corrupted prompts, so no
#   method that patches in the corrupted run can see them, though the circuit cannot work without them (section 2).
#   A circuit is always a circuit *for a contrast*; the corruption decides which part of the mechanism is visible.
# * A saturated attention pattern is where a first-order method (EAP) fails and an integrating one (EAP-IG) or an
#   exact one (path patching) does not. **Paper**: on InterpBench's models, scored by the same AUROC, ACDC was ahead
#   and EAP-IG competitive. Our two keys are far smaller and hand-built: they show *why* a method misses an edge, not
#   how often it does on real models.
# * The answer key is as honest as its construction: the distractors here write only other tokens' logits, so a
#   metric that sees every logit (log-probability) turns them into part of the "circuit". A real model has no such
#   clean separation, and no key.
# %% [markdown]
# ### The claims of this notebook
# %%
from tutorial_lib.course import claims

claims.summary("05", record_as="05", model="the answer keys")
