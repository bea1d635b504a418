# %% [markdown]
# # 03 · The spectral probe recipe: watch induction heads form, screen for them with a planted probe, test them by ablation
#
# Xu (2026) finds head circuits in three steps, without labelled task data: (1) **spectral**: rank heads by the
# integral over training of their *participation ratio* (PR; [glossary](00_start_here.ipynb#glossary)); (2)
# **selectivity**: which attention pattern each head implements on a *planted-pair probe* (`… A B … A`); (3)
# **causal**: ablate the candidates together against layer-matched random heads (a few draws: support, not proof).
#
# <details><summary>Learning objectives</summary>
#
# Compute a PR and its integral; measure selectivity and classify heads; test a circuit against a layer-matched
# control and say which conclusions flip with the ablation, metric or threshold; check the previous-token → induction
# dependency and seed specificity; watch a circuit form; run the recipe on a model where induction heads are a
# minority (at least one head, at most a quarter).
# </details>
#
# | section | time | exercises |
# | --- | --- | --- |
# | 0. Setup | 5 min | |
# | 1. Train small models and watch them | 10 min | |
# | 2. Step 1: participation ratio | 20 min | 1 `participation_ratio` (easy, 5 min); 2 `pr_integral` (easy, 10 min) |
# | 3. Step 2: selectivity | 20 min | 3 `induction_selectivity` (medium, 10 min) |
# | 4. Step 3: causal verification | 50 min | 4 `ablated_loss` (medium, 15 min); 5 `ablation_test` (hard, 25 min) |
# | 5. Previous-token → induction, seeds, timing | 30 min | 6 `k_composition` (medium, 10 min) |
# | 6. The ablation panel | 10 min | |
# | 7. Which conclusions flip | 10 min | |
# | 8. A model that learned more than induction | 15 min | 7 `induction_scores` (medium, 10 min) |
# | 9. What this shows, and what it doesn't | 5 min | |
#
# Numbers marked **paper** are Xu (2026)'s (GPT-2, Pythia); all others are measured here: sections 1–7 on tiny models
# trained below, section 8 on the loaded one.
# %% [markdown]
# ## 0. Setup (~5 min)
# %% tags=course-install
from tutorial_lib import setup

env = setup(seed=0)
# %%
import torch

from tutorial_lib import load_model
from tutorial_lib.course import reading

torch.set_num_threads(1)  # tiny models gain nothing from more threads, and they slow a busy CPU down
MODEL_NAME = "auto"
model = load_model(MODEL_NAME)  # sections 1-7 train their own models; section 8 runs the recipe on this one
USE_HUB = getattr(model.cfg, "original_architecture", None) is not None  # True for GPT-2 / Pythia from the hub
print("hub model loaded:", USE_HUB, "(the banner above is about this model: section 8 uses it; sections 1-7 use the small "
      "models this notebook trains)")
# %% [markdown]
# **With the hub** (skipped offline): `checkpoint_recipe` runs the three steps on a few of a model's published
# training checkpoints (Pythia; OLMo-1B-0724, the paper's; OLMo-2).
#
# <details><summary>Which checkpoints, and what they cost</summary>
#
# Pythia publishes 154 checkpoints, OLMo-1 and OLMo-2 hundreds (`step…-tokens…B` branches). The recipe takes step 1's
# PR at each checkpoint and its integral over log(tokens seen), then the 50× filter and the group ablation on the last
# one. `"olmo-1b-0724"` (1.28 B parameters; loaded under OLMo-1B-hf's configuration after a check) and `"olmo-2-1b"`
# (1.5 B) need a GPU or 12–15 GiB of RAM per checkpoint. The cell runs only when `USE_HUB` is true.
# </details>
# %%
HUB_CHECKPOINT_MODEL = "pythia-70m"  # or "olmo-1b-0724", "olmo-2-1b", "pythia-160m" ...: models with checkpoints
if USE_HUB:
    from tutorial_lib.course import sizes
    from tutorial_lib.studies.spectral_hub import checkpoint_recipe

    hub_recipe = checkpoint_recipe(HUB_CHECKPOINT_MODEL, n_checkpoints=sizes.pick("training checkpoints", full=5, cpu=4, quick=2),
                                   probe_n=sizes.pick("probe sequences", full=128, cpu=64, quick=16, verbose=False))
    print("top heads by PR integral:", [(h, round(v, 2)) for h, v in hub_recipe.top])
    reading.see(hub_recipe.reading(), paper="Induction circuits of 3–6 heads in every model studied; step 1 is a general "
                "indicator of specialisation, not an induction detector.", model=model)
# %% [markdown]
# ## 1. Train small models and watch them (~10 min)
#
# Attention-only transformers trained on random symbols whose segments repeat (only induction predicts them):
# **small** (2 layers × 4 heads; seeds 1, 2) and **deep** (3 × 4; seed 1), 1000 steps each, cached. The **probe** is
# step 2's planted-pair batch (`BOS r … r A B r … r A`).
#
# <details><summary>The training recipe</summary>
#
# `tutorial_lib.zoo.induction_models`: rotary positions, 128 symbols, 3 repeated segments of 2–8 tokens in 48-token
# sequences, heads of width 16, d_model 64. Its **large** size (8 heads per layer, d_model 128) does not form the
# pair reliably within 1000 steps, so it is left out.
# </details>
# %%
from tutorial_lib.studies.spectral import planted_probe, train_or_load

reading.subject("the small models this notebook trains")  # sections 1-7: the same whatever model was loaded
probe = planted_probe(n=256, seq_len=48, seed=0)
print(f"probe: {probe.n} sequences of {probe.seq_len} tokens (rows whose earlier A sat in the last 6 positions dropped)")
SMALL_SEEDS, DEEP_SEEDS = (1, 2), (1,)
STEPS = {"small": 1000, "deep": 1000}
# %% [markdown]
# **Predict** (write it into `PREDICT_N_INDUCTION`): how many of the first small model's 8 heads will reach 50×
# induction selectivity (step 2's filter)?
#
# **Scoring, for every prediction here** (`tutorial_lib.studies.fair`): right when the run cannot tell it from its own
# answer. A number: inside the 95% bootstrap interval over the probe's examples. A choice: tied with the best (over
# the two seeds where only retraining could resample). A yes/no: the verdict of the claim's own test.
# %%
PREDICT_N_INDUCTION = 2  # LEARNER: None  # how many of the small model's 8 heads pass the 50× induction filter? an integer 0-8
# %% [markdown]
# A `SpectralMonitor` records every head's PR (left) and induction selectivity (right, log scale) at 12 log-spaced
# checkpoints and redraws the figure. Watch layer 1's selectivity jump between two checkpoints.
# %%
runs = {}
for size, seeds in (("small", SMALL_SEEDS), ("deep", DEEP_SEEDS)):
    for seed in seeds:
        run = train_or_load(size, seed, STEPS[size], probe)
        runs[run.name] = run
        print(run.summary())
# %%
def first_crossing(run, threshold=50.0):
    """The first checkpoint at which some head's induction selectivity reaches ``threshold`` (None: never)."""
    best = run.monitor.sel["induction"].flatten(1).amax(1)
    return next((i for i, v in enumerate(best.tolist()) if v >= threshold), None), best


first = runs[f"small seed {SMALL_SEEDS[0]}"]
jump, best_sel = first_crossing(first)
steps = first.monitor.steps
if jump:
    reading.see(f"{first.name}: the best induction selectivity is ≤ {float(best_sel[:jump].max()):.1f}× up to step "
                f"{steps[jump - 1]}, {float(best_sel[jump]):.0f}× at step {steps[jump]} (the jump lies in those "
                f"{steps[jump] - steps[jump - 1]} steps), {float(best_sel[-1]):.0f}× at the end. First checkpoint at ≥ 50×: "
                + ", ".join(
                    f"{n} step {r.monitor.steps[first_crossing(r)[0]]}" if first_crossing(r)[0] is not None else f"{n} never"
                    for n, r in runs.items()) + ".")
else:
    reading.see(f"In {first.name} no head reached 50× induction selectivity at any checkpoint (best "
                f"{float(best_sel.max()):.1f}×): induction did not form in this run.")
# %% [markdown]
# **Claim**: within 1000 steps the previous-token → induction pair forms in both small seeds (`check_induction_pair`);
# it fails if a seed stays on the loss plateau.
# %%
for name, run in runs.items():
    p = run.pair
    print(f"{name:14s} formed={p['formed']!s:5s} loss {p['loss']:.3f} → {p['loss_prev_ablated']:.2f} nats with the "
          f"previous-token head(s) {p['prev_heads']} ablated (control {p['control_heads']}: {p['loss_control_ablated']:.2f})")
formed = [n for n, r in runs.items() if r.formed]
print("pair formed in:", formed, "| not formed in:", [n for n in runs if n not in formed])
from tutorial_lib.course.claims import check
from tutorial_lib.studies.spectral_claims import formation_claim

_ = check(*formation_claim(runs, "small").as_args())
lp = [r.pair["loss_prev_ablated"] for r in runs.values()]
lc = [r.pair["loss_control_ablated"] for r in runs.values()]
worst_loss = max(r.pair["loss"] for r in runs.values())
reading.see(f"The pair formed in {len(formed)} of {len(runs)} runs; held-out loss ≤ {worst_loss:.3f} nats. Ablating the best "
            f"previous-token head: {min(lp):.2f}–{max(lp):.2f} nats; another layer-0 head: {min(lc):.2f}–{max(lc):.2f}. One "
            "layer-0 head carries most of what induction needs.",
            paper="Ablating the previous-token circuit (8–9 heads in the paper's models) destroys induction.", model=model)
# %% [markdown]
# ## 2. Step 1: participation ratio (~20 min)
#
# Stack one head's output at the final position over the probe (`hook_z`, not mean-centred) into `X`,
# `[n_examples, d_head]`. With singular values σᵢ of `X` and `pᵢ = σᵢ² / Σⱼ σⱼ²`,
# $\mathrm{PR} = \exp(-\sum_i p_i \log p_i)$: ≈ 1 for a head writing one vector, high for one copying varied content.
#
# <details><summary>Two definitions</summary>
#
# The exp-entropy form is the paper's public code's. Its written summary gives `(Σλ)² / Σλ²` with λ the eigenvalues of
# `XᵀX/n`; both equal k for k equal directions. The library has both (`definition="exp_entropy"` or `"order2"`).
# </details>
#
# **Exercise 1** (easy, 5 min). Write `participation_ratio(X)` with the exp-entropy definition; return a float.
#
# <details><summary>Hint</summary>
#
# `torch.linalg.svdvals(X.double())` gives the singular values σ; `p = σ² / Σσ²`; drop the entries with p = 0
# (they contribute 0, and 0 · log 0 is nan in torch); return `exp(-Σ p log p)`.
# </details>
# %%
def participation_ratio(X):
    # BEGIN SOLUTION: s = svdvals(X); p = s**2 / sum(s**2); return exp(-sum(p * log p)) as a float
    s = torch.linalg.svdvals(X.double())
    p = s**2 / (s**2).sum()
    p = p[p > 0]
    return float(torch.exp(-(p * p.log()).sum()))
    # END SOLUTION


from tutorial_lib import checks

checks.check_participation_ratio(participation_ratio)
# %% [markdown]
# PR over training, first small run (x: tokens seen, log scale).
# %%
from tutorial_lib.viz.spectral import integral_ranking_figure, pr_trajectory_figure

mon = first.monitor  # first: the first small run (defined after training)
pr_trajectory_figure(mon.pr, mon.tokens_seen, title=f"Participation ratio over training ({first.name})").show()
pr = mon.pr  # [checkpoint, layer, head]
low = int(pr.mean((1, 2)).argmin())
reading.see(f"PR {float(pr[0].min()):.1f}–{float(pr[0].max()):.1f} at step 0; mean {float(pr[low].mean()):.1f} at step "
            f"{mon.steps[low]} (layer 1: {float(pr[low, 1].mean()):.1f}); at the end layer 0 {float(pr[-1, 0].min()):.1f}–"
            f"{float(pr[-1, 0].max()):.1f}, layer 1 {float(pr[-1, 1].min()):.1f}–{float(pr[-1, 1].max()):.1f}."
            + (" Layer 0's heads, which copy changing tokens too, rise as well: the rise is not specific to induction."
               if float(pr[-1, 0].mean()) >= 0.7 * float(pr[-1, 1].mean()) else ""))
# %% [markdown]
# The **integral** `I(L,H) = ∫ max(PR − 1, 0) d log(tokens)` ranks heads by how much extra dimension they held, and
# for how long; it does *not* say what they do.
#
# **Exercise 2** (easy, 10 min). Write `pr_integral(pr, tokens_seen)`: `pr` is `[n_checkpoints, n_layers, n_heads]`,
# `tokens_seen` a list of `n_checkpoints` counts, the first of them 0 (the initial weights). Return `I` as an
# `[n_layers, n_heads]` tensor.
#
# <details><summary>Hint</summary>
#
# Keep the checkpoints with tokens_seen > 0 (log 0 = −inf); `x = log(tokens)`, `f = (pr − 1).clamp(min=0)`; the
# trapezoid rule sums `(f[i] + f[i+1]) / 2 × (x[i+1] − x[i])` over the intervals (`torch.trapezoid(f, x, dim=0)`
# does it in one call).
# </details>
# %%
def pr_integral(pr, tokens_seen):
    # BEGIN SOLUTION: drop tokens_seen == 0; x = log(tokens); f = clamp(pr - 1, min=0); trapezoid of f over x along dim 0
    t = torch.tensor(tokens_seen, dtype=torch.float64)
    keep = t > 0
    f = (pr.double() - 1).clamp(min=0)[keep]
    return torch.trapezoid(f, t[keep].log(), dim=0)
    # END SOLUTION


checks.check_pr_integral(pr_integral)
# %% [markdown]
# The library's `pr_integral` ranks the first run's heads; red bars are step 2's induction heads.
# %%
from tutorial_lib.methods.selectivity import classify_heads, induction_circuit, selectivity
from tutorial_lib.methods.spectral import pr_integral, rank_heads

integral = pr_integral(mon.pr, mon.tokens_seen)
sel = selectivity(first.model, probe)
print("ranking by I(L,H):", ", ".join(f"{h} {v:.1f}" for h, v in rank_heads(integral)))
integral_ranking_figure(integral, top_k=8, highlight=induction_circuit(sel), highlight_label="induction heads (step 2)").show()
ranking = [h for h, _ in rank_heads(integral)]
ind_heads = induction_circuit(sel, 50.0)
if ind_heads:
    best_rank = min(ranking.index(h) for h in ind_heads)
    reading.see(f"{ranking[0]} tops the ranking ({rank_heads(integral)[0][1]:.1f}); the induction heads "
                f"({', '.join(ind_heads)}) rank {', '.join(str(ranking.index(h) + 1) for h in ind_heads)} of {len(ranking)}, "
                f"{best_rank} other head(s) above the best of them. Step 1 screens for content-dependent heads; step 2 "
                "says which do induction.",
                paper="The paper says the same of step 1: a general indicator of specialisation; in models dominated by "
                      "attention sinks it ranks generic content-dependent heads above task-specific ones.", model=model)
# %% [markdown]
# Do the two PR definitions rank the heads alike?
# %%
from tutorial_lib.methods.spectral import head_participation_ratios

pr_e = head_participation_ratios(first.model, probe, definition="exp_entropy")
pr_2 = head_participation_ratios(first.model, probe, definition="order2")
print("final PR, exp-entropy:\n", pr_e.round(decimals=2), "\nfinal PR, order-2:\n", pr_2.round(decimals=2))
rank_of = lambda t: t.flatten().argsort().argsort().double()
rho = float(torch.corrcoef(torch.stack([rank_of(pr_e), rank_of(pr_2)]))[0, 1])
reading.answer("Do the two definitions rank the heads alike?",
               f"Order 2 is lower (mean {float(pr_2.mean()):.1f} against {float(pr_e.mean()):.1f}; it never exceeds the "
               f"exp-entropy PR), but the {pr_e.numel()} heads' Spearman rank correlation is {rho:.2f}: the definition "
               "changes the numbers, not the ranking.")
# %% [markdown]
# ## 3. Step 2: attention-pattern selectivity (~20 min)
#
# At the query (the final `A`) each pattern names a key: **induction** → the `B` after the earlier `A`;
# **previous-token** → `T−2`; **duplicate** → the earlier `A`; **BOS** → 0; **self** → `T−1`; **local** → `T−3 … T−6`.
# **Selectivity** = attention there ÷ attention on 50 random other positions. **BOS heads** (≥ half their attention on
# position 0) stay out of the induction circuit.
#
# <details><summary>Why not divide by 1/T, as the paper's text does?</summary>
#
# The uniform baseline (`baseline="uniform"`) makes selectivity T × the attention, so on this 48-token probe it can
# never reach 50×. The random-positions baseline has its own bias: a head that parks its attention on the first token
# can score 3% / 0.05% = 60×. Hence the BOS rule, and the absolute attention kept beside each ratio (`sel.attention`);
# section 8's table shows both baselines.
# </details>
#
# **Exercise 3** (medium, 10 min): selectivity for one pattern. Write `induction_selectivity(att, a_pos, base_pos)`:
# `att` is `[n, n_layers, n_heads, T]` (each head's attention row at the query), `a_pos` is `[n]` (the earlier `A`),
# `base_pos` is `[n, k]`. Return `[n_layers, n_heads]`: (mean over examples of the attention to `a_pos + 1`) ÷
# (mean over examples and baseline positions of the attention to `base_pos`).
#
# <details><summary>Hint</summary>
#
# `att[torch.arange(n), :, :, a_pos + 1]` picks each example's target column (`[n, L, H]`); for the baseline,
# `att.gather(3, base_pos[:, None, None, :].expand(-1, L, H, -1))` gives `[n, L, H, k]`. Average each over its
# examples (and positions) first, then divide: a ratio of means.
# </details>
# %%
def induction_selectivity(att, a_pos, base_pos):
    # BEGIN SOLUTION: gather att at a_pos+1 and at base_pos along the last axis, average, divide
    n = att.shape[0]
    rows = torch.arange(n)
    target = att[rows, :, :, a_pos + 1].mean(0)  # [L, H]
    idx = base_pos[:, None, None, :].expand(-1, att.shape[1], att.shape[2], -1)
    base = att.gather(3, idx).mean(3).mean(0)
    return target / base.clamp(min=1e-8)
    # END SOLUTION


checks.check_induction_selectivity(induction_selectivity, first.model, probe)
# %% [markdown]
# All six patterns, every head of the first run (hover for the absolute attention). Dots mark selectivity ≥ 30×.
# %%
from tutorial_lib.viz.spectral import selectivity_heatmaps

selectivity_heatmaps(sel, threshold=30).show()
from collections import Counter

classes_first = classify_heads(sel, 30.0, 50.0)
n_ind = len(induction_circuit(sel, 50.0))
L0 = Counter(c for h, c in classes_first.items() if h.startswith("a0."))
from tutorial_lib.studies.fair import whole_numbers_in
from tutorial_lib.studies.spectral_loaded import induction_count_range

_, (lo_ind, hi_ind) = induction_count_range(first.model, probe, 50.0)  # the count over resampled probe examples
reading.predicted(PREDICT_N_INDUCTION, whole_numbers_in(lo_ind, hi_ind, n_ind),
                  "heads passing the 50× induction filter in the first small model",
                  options=range(sel["induction"].numel() + 1),
                  why=f"{n_ind} of {sel['induction'].numel()} heads (95% bootstrap interval {lo_ind:.0f}–{hi_ind:.0f}).")
other_best = max(float(sel[p].max()) for p in ("duplicate-token", "BOS", "local"))
reading.see(f"Layer 1: {sum(c == 'induction' for h, c in classes_first.items() if h.startswith('a1.'))} of "
            f"{first.model.cfg.n_heads} heads are induction heads, {float(sel['induction'][1].min()):.0f}–"
            f"{float(sel['induction'][1].max()):.0f}× ({100 * float(sel.attention['induction'][1].min()):.0f}–"
            f"{100 * float(sel.attention['induction'][1].max()):.0f}% of their attention on B; uniform baseline "
            f"{float(sel.with_baseline('uniform')['induction'][1].min()):.0f}–"
            f"{float(sel.with_baseline('uniform')['induction'][1].max()):.0f}×). BOS heads: "
            f"{', '.join(sel.bos_heads()) or 'none'}. Layer 0's classes: "
            + ", ".join(f"{c} ×{k}" for c, k in L0.most_common()) + f" (best previous-token {float(sel['previous-token'][0].max()):.0f}×). "
            f"Best duplicate-token, BOS or local: {other_best:.0f}×.",
            paper="GPT-2 124M: an induction circuit of a handful of heads out of 144.", model=model)
# %% [markdown]
# Layer 1's attention on one probe sequence: hover over the last token; an induction head lights up the token after
# the earlier `A`. (`layer=0` shows a previous-token head's diagonal.)
# %%
from tutorial_lib.viz.figures import attention_view

from tutorial_lib.studies.spectral import query_attention

att0 = query_attention(first.model, probe)[0]  # the shown sequence: [layer, head, key position] at the query
a0, T = int(probe.a_pos[0]), probe.seq_len
prev_best = int(sel["previous-token"][0].argmax())
reading.answer("Where do the heads look in this sequence?",
               f"The earlier A is at position {a0}, so induction looks at {a0 + 1}. The layer-1 heads put "
               + ", ".join(f"{100 * float(att0[1, h, a0 + 1]):.0f}%" for h in range(first.model.cfg.n_heads))
               + f" there (uniform: {100 / T:.1f}%); a0.h{prev_best} puts {100 * float(att0[0, prev_best, T - 2]):.0f}% "
               "on the previous token.")
attention_view(first.model, probe.tokens[:1], layer=1)  # drawn by JavaScript when the cell runs (a saved copy: re-run it)
# %% [markdown]
# **Classification** (the paper's rule): a head takes its most selective pattern at ≥ 30×; the induction circuit is
# every non-BOS head at ≥ 50×. Change the thresholds and re-run.
# %%
CLASS_THRESHOLD, INDUCTION_THRESHOLD = 30.0, 50.0
classes_by_run = {}
for name, run in runs.items():
    s = selectivity(run.model, probe)
    classes = classes_by_run[name] = classify_heads(s, CLASS_THRESHOLD, INDUCTION_THRESHOLD)
    print(f"{name}: induction circuit {', '.join(induction_circuit(s, INDUCTION_THRESHOLD)) or 'none'}")
    for h, c in classes.items():
        if c != "unclassified":
            print("    " + s.describe(h, c))  # the ratio, and the absolute attention beside it
    print(f"    ({sum(c == 'unclassified' for c in classes.values())} of {len(classes)} heads unclassified)")
# %%
unclassified = {n: [h for h, c in cl.items() if c == "unclassified"] for n, cl in classes_by_run.items()}
reading.answer("Which heads are induction heads, and which have no class, in each run?",
               "Induction circuits: " + "; ".join(f"{n}: {', '.join(h for h, c in cl.items() if c == 'induction') or 'none'}"
                                                  for n, cl in classes_by_run.items())
               + ". Unclassified (no pattern reaches " + f"{CLASS_THRESHOLD:g}×): "
               + "; ".join(f"{n}: {', '.join(u) or 'none'}" for n, u in unclassified.items())
               + ". In a model that only has to do induction, the heads it does not need are left over.")
scales = (0.2, 1, 4, 16)
robust = {s: classify_heads(sel, CLASS_THRESHOLD * s, INDUCTION_THRESHOLD * s) for s in scales}
reading.answer("How robust are the classes to the thresholds? (first small run)",
               "With both thresholds scaled (class / induction): " + "; ".join(
                   f"{CLASS_THRESHOLD * s:g}× / {INDUCTION_THRESHOLD * s:g}×: {sum(c == 'induction' for c in cl.values())} "
                   f"induction, {sum(c != 'unclassified' for c in cl.values())} of {len(cl)} classified"
                   for s, cl in robust.items())
               + ". The induction heads of layer 1 sit so far above the thresholds that the circuit only shrinks when "
                 "the threshold climbs towards their own selectivity; the layer-0 classes drop out first.")
# %% [markdown]
# ## 4. Step 3: is the candidate circuit causal? (~50 min)
#
# Any ablation hurts a 2-layer model; compare with a **layer-matched random control**
# ([glossary](00_start_here.ipynb#glossary)) and the **upper bound** (every head of those layers).
#
# **Exercise 4** (medium, 15 min): the group ablation. Write `ablated_loss(model, probe, heads)`: zero the output of
# every head in `heads` at every position and return the mean cross-entropy of `B` at the query, in nats, as a float.
# A head's output before `W_O` is the hook `blocks.{layer}.attn.hook_z`, `[batch, pos, head, d_head]`; run
# `model.run_with_hooks(tokens, fwd_hooks=[(hook_name, hook_fn), ...])`. The probe gives `probe.tokens` `[n, T]`,
# `probe.query_pos` (the second `A`) and `probe.targets` (`B`, `[n]`).
#
# <details><summary>Hint</summary>
#
# A hook function takes `(z, hook)` and returns the changed `z`; one per head, `z[:, :, head] = 0`
# (`functools.partial` or a default argument binds `head`). Parse `"a1.h3"` as layer 1, head 3. Then
# `F.cross_entropy(logits[:, probe.query_pos], probe.targets)` (`import torch.nn.functional as F`).
# </details>
# %%
from functools import partial

import torch.nn.functional as F


def ablated_loss(model, probe, heads):
    # BEGIN SOLUTION: one hook per head on blocks.{l}.attn.hook_z zeroing z[:, :, h]; run_with_hooks; cross-entropy of targets at query_pos
    def zero(z, hook, head):
        z[:, :, head] = 0
        return z

    hooks = [(f"blocks.{int(h.split('.')[0][1:])}.attn.hook_z", partial(zero, head=int(h.split(".h")[1]))) for h in heads]
    with torch.no_grad():
        logits = model.run_with_hooks(probe.tokens, fwd_hooks=hooks)
    return float(F.cross_entropy(logits[:, probe.query_pos], probe.targets))
    # END SOLUTION


checks.check_group_ablation(ablated_loss, first.model, probe, induction_circuit(sel, 50.0))
# %% [markdown]
# **Exercise 5** (hard, 25 min): the test behind the verdict. Write `ablation_test(model, probe, heads, mode, n_draws,
# seed)`. Ablate `heads` together in `mode` (`"zero"`, `"mean"` or `"resample"`) and take the **drop**: how much the
# loss on `B` rises, in nats. Then draw `n_draws` layer-matched random sets (draw `i` with seed `seed + i`), ablate
# each the same way, and give the one-sided p-value of the found set's drop against the draws', with the +1
# correction. Return `{"drop": float, "controls": [head names of each draw], "control_drops": [floats], "p": float}`.
#
# <details><summary>Hint 1: the idea</summary>
#
# If the found heads mattered no more than other heads of their layers, their drop would rank anywhere among the
# draws'. So p is the share of draws that hurt at least as much, the found set counted as one more draw (p is never 0).
# </details>
#
# <details><summary>Hint 2: the API</summary>
#
# `ablation_hooks(model, heads, mode, reference=probe.tokens)` (`tutorial_lib.core.circuits`) gives the hooks of every
# mode; run them as in exercise 4. Draw `i`: `rng = np.random.default_rng(seed + i)`, then for each layer in order,
# `rng.choice(pool, size=count, replace=False)` with `pool` the layer's other heads, `a{layer}.h0` up:
# `layer_matched_random(model, heads, seed=seed + i).nodes` (`tutorial_lib.core.controls`) draws the same.
# </details>
#
# <details><summary>Hint 3: code</summary>
#
# `loss(hs)`: `model.run_with_hooks(probe.tokens, fwd_hooks=ablation_hooks(...) if hs else [])`, then the cross-entropy
# at `probe.query_pos`. `drop = loss(heads) - loss([])`, the same for each draw; `k = sum(d >= drop for d in
# control_drops)`, `p = (k + 1) / (n_draws + 1)`.
# </details>
# %%
from collections import Counter

import numpy as np

from tutorial_lib.core.circuits import ablation_hooks
from tutorial_lib.studies.spectral import candidate_circuit


def ablation_test(model, probe, heads, mode, n_draws, seed):
    # BEGIN SOLUTION: ablate the set together, then n_draws layer-matched draws (seed + i); p against the draws' drops
    def loss(hs):
        with torch.no_grad():
            logits = model.run_with_hooks(probe.tokens, fwd_hooks=ablation_hooks(model, hs, mode, reference=probe.tokens) if hs else [])
        return float(F.cross_entropy(logits[:, probe.query_pos], probe.targets))

    clean = loss([])
    drop = loss(heads) - clean
    per_layer = Counter(int(h.split(".")[0][1:]) for h in heads)
    controls = []
    for i in range(n_draws):
        rng = np.random.default_rng(seed + i)
        draw = []
        for layer, k in sorted(per_layer.items()):
            pool = [f"a{layer}.h{j}" for j in range(model.cfg.n_heads) if f"a{layer}.h{j}" not in heads]
            draw += [str(h) for h in rng.choice(pool, size=k, replace=False)]
        controls.append(draw)
    control_drops = [loss(c) - clean for c in controls]
    p = (sum(d >= drop for d in control_drops) + 1) / (n_draws + 1)
    return {"drop": drop, "controls": controls, "control_drops": control_drops, "p": p}
    # END SOLUTION


checks.check_ablation_test(ablation_test, first.model, probe, candidate_circuit(sel, first.model, INDUCTION_THRESHOLD, CLASS_THRESHOLD))
# %% [markdown]
# `verify_circuit` tests exercise 5's candidate by top-1, the upper bound and a permutation test against five seeds'
# draws. **Predict** first.
# %%
PREDICT_CAUSAL = True  # LEARNER: None  # does the candidate's ablation beat every matched-random draw with p < 0.05? True or False
PREDICT_CONTROL_TOP1 = 90  # LEARNER: None  # induction top-1 accuracy (%) left by the matched-random control: a number 0-100
# %%
from tutorial_lib.methods.head_ablation import verify_circuit
from tutorial_lib.studies.spectral import candidate_circuit, control_induction_heads, verification_reading
from tutorial_lib.viz.spectral import ablation_figure

candidate = candidate_circuit(sel, first.model, INDUCTION_THRESHOLD, CLASS_THRESHOLD)
result = verify_circuit(first.model, candidate, probe, n_control_seeds=5, seed=0)
print(result.table())
print(result.verdict)
ablation_figure(result).show()
ctrl_heads, ctrl_ind = control_induction_heads(result, induction_circuit(sel, INDUCTION_THRESHOLD))
reading.predicted(PREDICT_CAUSAL, result.causal, "the candidate beats every matched-random draw, p < 0.05",
                  options=(True, False))
from tutorial_lib.studies.fair import interval_tolerance

ctrl_top1 = {tuple(c): e["top1"].double() for c, e in zip(result.control_sets, result.per_example["controls"])}
ctrl_per_example = 100 * torch.stack(list(ctrl_top1.values())).mean(0)  # each example, averaged over the distinct draws
reading.predicted(PREDICT_CONTROL_TOP1, round(100 * result.control_mean(), 1),
                  "top-1 accuracy (%) left by the matched-random control",
                  tolerance=round(interval_tolerance(ctrl_per_example), 1),
                  why=f"The control ablates {', '.join(ctrl_heads)}, induction heads among them: {', '.join(ctrl_ind) or 'none'}.")
reading.see(verification_reading(result, candidate, classes_by_run[first.name], CLASS_THRESHOLD), model=model,
            paper="GPT-2 124M, top-6 heads ablated: induction top-1 16.1% → 0.85%; matched random heads leave 10.6%.")
# %% [markdown]
# **What did the control draw?** Its heads, their selectivities and the filters they pass:
# %%
from tutorial_lib.studies.spectral_circuit import control_filters

ctrl_table = control_filters(result, sel, INDUCTION_THRESHOLD, CLASS_THRESHOLD)
display(ctrl_table)
passing = ctrl_table[ctrl_table["passes induction filter"] | ctrl_table["passes previous-token filter"]]
reading.see(f"The control drew {len(ctrl_table)} head(s); {len(passing)} pass a filter that admitted the candidate: "
            + ", ".join(
                f"{h} {r['induction ×']:.0f}× induction" if r["passes induction filter"] else f"{h} {r['previous-token ×']:.0f}× previous-token"
                for h, r in passing.iterrows()) + ". "
            + (f"The verdict says the candidate's {len(candidate)} most selective heads matter more than the other "
               f"{len(passing)} filtered heads: narrower than \"induction heads are causal\"." if len(passing) else
               "The control is made of heads the filters reject."))
# %% [markdown]
# **Claim**: the candidate's drop beats every control draw and p < 0.05. It fails if a draw hurts as much; with so few
# distinct draws it reports itself *not testable* here, with the counts.
# %%
from tutorial_lib.studies.spectral_claims import causal_claim

_ = check(*causal_claim("03.candidate-causal", first.model, candidate, result,
                        induction_circuit(sel, INDUCTION_THRESHOLD)).as_args())
# %% [markdown]
# ## 5. Previous-token → induction, seeds, timing (~30 min)
#
# An induction head **K-composes** with a previous-token head ([glossary](00_start_here.ipynb#glossary)): the latter
# writes "the token before me was `A`" at `B`, where the induction head's key then matches its query.
#
# <details><summary>Composition, and why the score is a norm ratio</summary>
#
# A head reads the residual stream as queries, keys and values; an earlier head's output feeding its keys is
# K-composition (*where* it looks), its queries Q-composition, its values V-composition (Elhage et al. 2021). In
# TransformerLens a head writes `x @ W_OV` (`W_OV = W_V @ W_O`) and scores `x_q @ W_QK @ x_k.T` (`W_QK = W_Q @ W_K.T`).
# With `x_k = x @ W_OV` the path is `W_OV @ W_QK.T` (up to a transpose). The score is how much of the two matrices'
# size survives the product; unrelated random matrices score above 0 too, so it means something only against random
# matrices of the same shapes.
# </details>
#
# **Exercise 6** (medium, 10 min). Write `k_composition(W_OV, W_QK)`: the sender's `W_OV` and the receiver's `W_QK`
# (both `[d_model, d_model]`); return `||W_OV @ W_QK.T||_F / (||W_OV||_F ||W_QK||_F)` as a float.
#
# <details><summary>Hint</summary>
#
# `torch.linalg.matrix_norm(M)` (or `M.norm()`) is the Frobenius norm. Transpose `W_QK`, not `W_OV`; the check
# compares with `model.all_composition_scores("K")`'s definition.
# </details>
# %%
def k_composition(W_OV, W_QK):
    # BEGIN SOLUTION: ||W_OV @ W_QK.T||_F / (||W_OV||_F * ||W_QK||_F), as a float
    return float((W_OV @ W_QK.T).norm() / (W_OV.norm() * W_QK.norm()))
    # END SOLUTION


checks.check_k_composition(k_composition, first.model)
# %% [markdown]
# Layer-0 heads' composition with the induction heads, beside random matrices of the same shapes (weights only).
# %%
from tutorial_lib.studies.spectral_circuit import composition_summary

comp = {}
for name, run in runs.items():
    if not run.formed:
        continue
    s_run = selectivity(run.model, probe)
    ind = [h for h in induction_circuit(s_run, INDUCTION_THRESHOLD) if h.startswith("a1.")] or [run.pair["induction_head"]]
    comp[name] = composition_summary(run.model, [f"a0.h{i}" for i in range(run.model.cfg.n_heads)], ind)
    print(f"{name} (previous-token head of check_induction_pair: {run.pair['prev_heads'][0]}; receivers {', '.join(ind)})")
    display(comp[name].table())
# %%
k_rows = {n: (c.best("K"), c.scores["K"][c.best("K")], c.z(c.best("K")),
              max(v for h, v in c.scores["K"].items() if h != c.best("K")), c.baseline["K"]) for n, c in comp.items()}
from tutorial_lib.studies.spectral_claims import k_composition_claim

for name, (best, v, z, rest, base) in k_rows.items():
    check(*k_composition_claim(name, runs[name].model.cfg.n_heads, best, runs[name].pair["prev_heads"][0], z).as_args())
if comp:
    bases = {f"{base[0]:.3f} ± {base[1]:.3f}" for *_, base in k_rows.values()}
    reading.see("Best K-composition per run: " + "; ".join(
        f"{n}: {b} {v:.3f} (" + (f"random {base[0]:.3f} ± {base[1]:.3f}; " if len(bases) > 1 else "") + f"next {r:.3f})"
        for n, (b, v, z, r, base) in k_rows.items())
        + (f"; random matrices {bases.pop()}. " if len(bases) == 1 else ". ")
        + ("Always the previous-token head; " if all(b == runs[n].pair["prev_heads"][0] for n, (b, *_) in k_rows.items())
           else "Not always the previous-token head; ")
        + "its Q / V scores " + ", ".join(
            f"{comp[n].scores['Q'][b]:.3f} / {comp[n].scores['V'][b]:.3f}" for n, (b, *_) in k_rows.items())
        + ": it feeds keys, not queries or values.")
# %% [markdown]
# Now in a forward pass: ablate the layer-0 previous-token heads, next to matched random layer-0 heads.
# %%
PREDICT_PREV_DESTROYS = True  # LEARNER: None  # will ablating only the layer-0 previous-token heads take induction top-1 below half? True or False
# %%
from tutorial_lib.methods.head_ablation import prev_token_dependency
from tutorial_lib.studies.spectral import prev_token_heads

dep_rows, dep_sel, dep_prev = {}, {}, {}
for name, run in runs.items():
    if not run.formed:
        print(f"{name:14s} skipped: the induction pair did not form in this run")
        continue
    s = selectivity(run.model, probe)
    # at most half of layer 0, so that the matched control can draw as many other layer-0 heads
    prev = prev_token_heads(s, CLASS_THRESHOLD, max_heads=run.model.cfg.n_heads // 2) or [run.pair["prev_heads"][0]]
    ind = induction_circuit(s, INDUCTION_THRESHOLD) or [run.pair["induction_head"]]
    dep = prev_token_dependency(run.model, prev, ind, probe, n_control_seeds=3)
    dep_prev[name] = prev
    c = dep["conditions"]
    ctrl = np.mean([v["top1"] for k, v in c.items() if k.startswith("matched")])
    dep_rows[name] = (c["none"]["top1"], c["previous-token heads"]["top1"], ctrl)
    mean_sel = lambda cond: float(np.mean(list(cond["induction_selectivity"].values())))  # noqa: E731
    dep_sel[name] = (mean_sel(c["none"]), mean_sel(c["previous-token heads"]),
                     float(np.mean([mean_sel(v) for k, v in c.items() if k.startswith("matched")])))
    print(f"{name:14s} prev-token heads {prev}: induction top-1 {100 * c['none']['top1']:.0f}% → "
          f"{100 * c['previous-token heads']['top1']:.0f}% (matched random layer-0 heads: {100 * ctrl:.0f}%); "
          f"the induction heads' mean selectivity {dep_sel[name][0]:.0f}× → {dep_sel[name][1]:.1f}× "
          f"(matched random: {dep_sel[name][2]:.0f}×)")
# %%
from tutorial_lib.studies.spectral_claims import previous_token_claim

for name, (none, prev_ablated, ctrl) in dep_rows.items():
    check(*previous_token_claim(name, runs[name].model, dep_prev[name], none, prev_ablated, ctrl).as_args())
if dep_rows:
    after = [v[1] for v in dep_rows.values()]
    ctrls = [v[2] for v in dep_rows.values()]
    reading.predicted(PREDICT_PREV_DESTROYS, all(v[1] < 0.5 * v[0] for v in dep_rows.values()),
                      "ablating the previous-token heads takes top-1 below half, in every run", options=(True, False))
    reading.see(f"In {len(dep_rows)} run(s): top-1 {100 * min(v[0] for v in dep_rows.values()):.0f}% → "
                f"{100 * min(after):.0f}–{100 * max(after):.0f}% (matched random layer-0 heads: "
                f"{100 * min(ctrls):.0f}–{100 * max(ctrls):.0f}%); induction selectivity from "
                f"{min(v[0] for v in dep_sel.values()):.0f}× or more to {min(v[1] for v in dep_sel.values()):.1f}–"
                f"{max(v[1] for v in dep_sel.values()):.1f}× (control {min(v[2] for v in dep_sel.values()):.0f}–"
                f"{max(v[2] for v in dep_sel.values()):.0f}×). "
                + ("The intact induction heads no longer find their target: K-composition in a forward pass."
                   if all(v[1] < 0.5 * v[0] and v[1] < v[2] for v in dep_rows.values()) else
                   "In at least one run the dependency is weaker than the textbook's (see the claim above)."),
                paper="Ablating the previous-token circuit destroyed induction, the standard composition.", model=model)
# %% [markdown]
# **Seed specificity.** Ablate each small seed's induction circuit in both models (heads matched by name).
# **Paper**: circuits differ from seed to seed.
# %%
PREDICT_SEED_SPECIFIC = True  # LEARNER: None  # does each seed's circuit leave the other seed's model working? True or False
# %%
from tutorial_lib.methods.head_ablation import cross_seed_ablation

small = {n: r for n, r in runs.items() if r.size == "small"}
circuits = {n: induction_circuit(selectivity(r.model, probe)) for n, r in small.items()}
print("circuits:", circuits)
table = cross_seed_ablation({n: r.model for n, r in small.items()}, circuits, probe)
for model_name, row in table.items():
    print(f"model {model_name:14s}", {k: f"{100 * v:.0f}%" for k, v in row.items()})
off = [row[c] for m, row in table.items() for c in circuits if c != m]
own = [row[m] for m, row in table.items()]
specific = all(v >= 0.5 * table[m]["none"] for m, row in table.items() for c, v in row.items() if c not in ("none", m))
reading.predicted(PREDICT_SEED_SPECIFIC, specific, "seed-specific circuits (the other seed's circuit leaves at "
                  "least half of the accuracy)", options=(True, False))
reading.see("Circuits: " + "; ".join(f"{n}: {', '.join(c)}" for n, c in circuits.items())
            + f". Top-1 with its own circuit ablated: {', '.join(f'{100 * v:.0f}%' for v in own)}; the other seed's: "
            f"{', '.join(f'{100 * v:.0f}%' for v in off)}. "
            + ("Not seed-specific here"
               + (": each circuit is the whole of layer 1." if all(len(c) == first.model.cfg.n_heads for c in circuits.values())
                  else ".")
               if not specific else "Each circuit matters only in its own model."),
            paper="In a 51M-parameter model trained with six seeds, the recipe found distinct circuits per seed; ablating "
                  "seed A's circuit had no effect on seed B.", model=model)
# %% [markdown]
# **Fraction of specialised heads** (any class), per run; one head is 12.5% or 8% here. **Paper**: 17–19%.
# %%
from tutorial_lib.methods.selectivity import specialised_fraction_across

frac = specialised_fraction_across({n: (r.model, probe) for n, r in runs.items()}, CLASS_THRESHOLD, INDUCTION_THRESHOLD)
for name, f in frac.items():
    print(f"{name:14s} {f['n_specialised']}/{f['n_heads']} heads specialised ({100 * f['fraction']:.0f}%)")
reading.see("Specialised: " + ", ".join(f"{n} {100 * f['fraction']:.0f}%" for n, f in frac.items())
            + ": the repeat-only models have no head to spare.",
            paper="About 17–19% of heads specialised across 124M–410M; 4.7–27.3% in the 1B class.", model=model)
# %% [markdown]
# **Does PR rise before selectivity reaches 50×?** (**Paper**: yes.) Per induction head: where PR is half-way up,
# and where selectivity first reaches 50×.
# %%
from tutorial_lib.methods.spectral import emergence_timing
from tutorial_lib.studies.spectral import pr_rises_first

order_counts = Counter()
for name, run in runs.items():
    if not run.formed:
        continue
    heads = induction_circuit(selectivity(run.model, probe))
    timing = emergence_timing(run.monitor.pr, run.monitor.sel["induction"], sel_threshold=INDUCTION_THRESHOLD)
    steps = run.monitor.steps
    pr_first = pr_rises_first(timing, heads)
    print(f"{name} (training steps):")
    for h in heads:
        pr_step, sel_step = (steps[i] if i is not None else "never" for i in timing[h])
        order = {True: "PR first", None: "n/a"}.get(pr_first[h], "same checkpoint" if pr_step == sel_step else "selectivity first")
        order_counts[order] += 1
        print(f"    {h}  PR rises at {pr_step!s:>5}, selectivity ≥ {INDUCTION_THRESHOLD:g}× at {sel_step!s:>5}  → {order}")
reading.see(f"Over the {sum(order_counts.values())} induction heads of the runs above: "
            + ", ".join(f"{k} {v}" for k, v in order_counts.most_common())
            + " (\"PR first\": at least one log-spaced checkpoint earlier).",
            paper="The spectral signal rises before selectivity crosses its threshold; the circuit can be identified from "
                  "0.3–2% of the training tokens.", model=model)
# %% [markdown]
# ## 6. The ablation panel (~10 min)
#
# Toggle heads off and watch induction. Which smallest set destroys it? The candidate? One previous-token head?
# %%
from tutorial_lib.studies.spectral import panel_evaluate
from tutorial_lib.viz.widgets import AblationPanel

panel = AblationPanel(
    first.model, panel_evaluate(first.model, probe),
    presets={"candidate": candidate, "induction heads": induction_circuit(sel, INDUCTION_THRESHOLD),
             "matched random s0": result.control_sets[0]},
    plot="bar", title=f"Induction on the planted-pair probe ({first.name})",
    x_title="metric", y_title="accuracy on B (%)",
)
panel
# %% [markdown]
# Try the panel first; then open the answer (a greedy search, not exhaustive).
# %%
from tutorial_lib.methods.head_ablation import evaluate_induction
from tutorial_lib.studies.spectral import greedy_ablation_path

single = {h: float(evaluate_induction(first.model, probe, [h])["top1"].mean())
          for h in (f"a{l}.h{i}" for l in range(first.model.cfg.n_layers) for i in range(first.model.cfg.n_heads))}
path = greedy_ablation_path(first.model, probe, max_size=4)
below = next((hs for hs, v in path if v < 0.1), None)
reading.answer("Which smallest set of heads destroys induction? Is it the candidate? What does one previous-token head do?",
               "One head at a time, top-1 on B: " + ", ".join(f"{h} {100 * v:.0f}%" for h, v in single.items()) + ". "
               f"The most damaging single head is {path[1][0][0]} ({100 * path[1][1]:.0f}% left)"
               + (", layer 0's best previous-token head" if path[1][0][0] == f"a0.h{int(sel['previous-token'][0].argmax())}" else "")
               + f"; the most that ablating one layer-1 head can do is leave "
               f"{100 * min(v for h, v in single.items() if h.startswith('a1.')):.0f}% top-1, because the other induction "
               "heads still copy B. Greedy path: " + " → ".join(f"{{{', '.join(hs)}}} {100 * v:.1f}%" for hs, v in path[1:]) + ". "
               + (f"The first set below 10% has {len(below)} heads ({', '.join(below)}); " if below else
                  "No greedy set of up to 4 heads goes below 10%; ")
               + f"the candidate ({', '.join(candidate)}) leaves {100 * result.candidate['top1']:.1f}%. The smallest "
               "destroying set need not be the candidate"
               + (": this one lies all in layer 0, and starving the induction heads of the previous-token signal "
                  "disables all of them at once." if below and all(h.startswith("a0.") for h in below) else "."))
# %% [markdown]
# ## 7. Which conclusions flip (~10 min)
#
# `flip_table` re-tests each claim on the first small run under zero, mean and resample ablation
# ([glossary](00_start_here.ipynb#glossary)), loss or top-1, thresholds scaled by 0.2–16. "n/a": no head selected.
#
# **Predict**: under which ablation does "the candidate beats every matched-random draw" fail in the most cells?
# %%
PREDICT_FLIP_MODE = "resample"  # LEARNER: None  # "zero", "mean", "resample", or "none" (it never fails)
# %%
from tutorial_lib.course import sizes
from tutorial_lib.studies.spectral import FLIP_CLAIMS, flip_table, threshold_label

FLIP_THRESHOLDS = [(INDUCTION_THRESHOLD * s, CLASS_THRESHOLD * s) for s in scales]
n_perm = sizes.pick("permutations per cell of the flip table", full=2000, cpu=2000, quick=500, model=first.model)
flips = flip_table(first.model, probe, FLIP_THRESHOLDS, sel=sel, n_permutations=n_perm)
flips
# %%
other = runs[f"small seed {SMALL_SEEDS[1]}"] if len(SMALL_SEEDS) > 1 else None
flips_other = flip_table(other.model, probe, FLIP_THRESHOLDS, n_permutations=n_perm) if other else None
from tutorial_lib.studies.fair import tied_over_runs

m = flips.measurements
MODES = ("zero", "mean", "resample")


def causal_fails(ft):
    """{ablation: cells where the causal claim fails} in one seed's flip table."""
    mm = ft.measurements
    counts = mm[(mm.claim == FLIP_CLAIMS[1]) & (mm.verdict == "fail")].ablation.value_counts()
    return {a: int(counts.get(a, 0)) for a in MODES}


fail_runs = [causal_fails(ft) for ft in (flips, flips_other) if ft is not None]
fails_by_mode = {a: [f[a] for f in fail_runs] for a in MODES}
never = [sum(f.values()) == 0 for f in fail_runs]  # seeds where the claim never fails
tied_modes = {"none"} if all(never) else tied_over_runs(fails_by_mode) | ({"none"} if any(never) else set())
reading.predicted(PREDICT_FLIP_MODE, tied_modes, "the ablation under which the causal claim fails most often",
                  options=("zero", "mean", "resample", "none"),
                  why="Failing cells per seed: " + ", ".join(f"{a} {'/'.join(map(str, v))}" for a, v in fails_by_mode.items())
                      + " (tied: the seeds' ranges overlap).")
paper_top1 = m[(m.claim == FLIP_CLAIMS[1]) & (m.metric == "top1") & (m.threshold == threshold_label(INDUCTION_THRESHOLD, CLASS_THRESHOLD))]
margin = {r.ablation: r.value - r.control for r in paper_top1.itertuples()}
def held(ft, c):
    """'k of n': the cells where claim ``c`` holds, of those where it was tested."""
    v = ft.cells.loc[c].values.ravel()
    return f"{int((v == 'pass').sum())} of {int((v != 'n/a').sum())}"


reading.see(f"{first.name}, cells that pass: causal claim {held(flips, FLIP_CLAIMS[1])}; candidate beats the control's mean "
            f"{held(flips, FLIP_CLAIMS[2])}; minority {held(flips, FLIP_CLAIMS[0])}; previous-token heads destroy induction "
            f"{held(flips, FLIP_CLAIMS[3])}. Top-1 margin over the control at 50× / 30×: "
            + ", ".join(f"{k} {v:.2f}" for k, v in margin.items()) + "."
            + (" Resample writes another `B`, hurting the control's induction heads too."
               if margin.get("resample", 1) < min(margin.get("zero", 0), margin.get("mean", 0)) else "")
            + ("" if flips_other is None else f" {other.name}: causal claim {held(flips_other, FLIP_CLAIMS[1])}; "
               f"{len(flips.differences(flips_other, FLIP_CLAIMS[1]))} cells differ (listed below)."),
            paper="The paper's claims use zero ablation, top-1 accuracy and the 50× / 30× thresholds.", model=model)
reading.answer("Where exactly does each claim fail, and with which numbers? (both seeds)",
               ("" if flips_other is None else "Causal-claim cells that differ between the two seeds: "
                + (", ".join(flips.differences(flips_other, FLIP_CLAIMS[1])) or "none") + ".\n\n")
               + f"{first.name}:\n\n" + "\n".join(f"* {line}" for line in flips.summary().splitlines())
               + "\n\nRead off the numbers:\n\n"
               + "\n".join(f"* {line}" for line in flips.notes(threshold_label(INDUCTION_THRESHOLD, CLASS_THRESHOLD)))
               + ("" if flips_other is None else
                  f"\n\n{other.name}:\n\n" + "\n".join(f"* {l}" for l in flips_other.summary().splitlines())
                  + "\n\nRead off its numbers:\n\n" + "\n".join(f"* {l}" for l in flips_other.notes())))
# %% [markdown]
# ## 8. A model that learned more than induction (~15 min)
#
# The loaded model (GPT-2 small, or offline `zoo-multitask-medium`: 4 × 8 heads, five tasks and copying) has many
# jobs. Steps 2 and 3 on its final weights: are induction heads a **minority** here?
#
# <details><summary>Held-out tokens, and the baselines</summary>
#
# The zoo model's training repeated only half of its ordinary tokens (a seeded split in its manifest); the other half,
# its **held-out tokens**, appear as ordinary words but are never repeated in training. Its probe draws from them, so
# a head passes only if it copies tokens it was never trained to copy (GPT-2's probe: random tokens). The table after
# the heatmaps puts the uniform `1/T` baseline and the attention on `B` and on position 0 beside the ratio.
# </details>
#
# **Predict.** How many of its heads pass the 50× induction filter?
# %%
PREDICT_LOADED_HEADS = 4  # LEARNER: None  # how many of the loaded model's heads pass the 50× induction filter? an integer
# %%
from tutorial_lib.studies.spectral_loaded import induction_minority, model_probe
from tutorial_lib.viz.spectral import selectivity_heatmaps

reading.subject(None)  # from here on the readings describe the model loaded at the top

probe_m = model_probe(model, n=sizes.pick("probe sequences (loaded model)", full=256, cpu=128, quick=64, model=model))
found = induction_minority(model, probe_m, INDUCTION_THRESHOLD, CLASS_THRESHOLD, n_control_seeds=5)
print(found.summary())
if found.result is not None:
    print(found.result.table())
selectivity_heatmaps(found.sel, CLASS_THRESHOLD).show()
# %%
found.table()  # every head that passes 50× on either baseline: both ratios, the attention on B and on BOS
# %%
from tutorial_lib.studies.spectral_loaded import induction_count_range

_, (lo_m, hi_m) = induction_count_range(model, probe_m, INDUCTION_THRESHOLD)
reading.predicted(PREDICT_LOADED_HEADS, whole_numbers_in(lo_m, hi_m, len(found.heads)),
                  "heads passing the 50× induction filter in the loaded model", options=range(found.n_heads + 1),
                  why=f"{len(found.heads)} of {found.n_heads} heads (95% bootstrap interval {lo_m:.0f}–{hi_m:.0f}).")
loaded_first, loaded_second = found.readings(CLASS_THRESHOLD)
reading.see(loaded_first, model=model,
            paper="GPT-2 124M: induction circuits of a handful of its 144 heads; top-6 ablated: 16.1% → 0.85% top-1, "
                  "matched random heads 10.6%.")
reading.answer("How do the baselines and the BOS heads change the count?", loaded_second)
r_m = found.result
from tutorial_lib.core import minority

from tutorial_lib.studies.spectral_claims import minority_claim

_ = check(*minority_claim(found, minority.MINORITY_FRACTION).as_args())
_ = check(*causal_claim("03.loaded-causal", model, found.result.heads if r_m is not None else found.heads, r_m,
                        found.heads).as_args())
# %% [markdown]
# **How many draws did that control have?** A layer half tested leaves exactly one draw.
# %%
from tutorial_lib.studies.spectral_circuit import control_choices_reading

if r_m is not None:
    reading.answer("How many draws did the control have, per layer?", control_choices_reading(r_m, filtered=found.heads))
# %% [markdown]
# **Do they copy any token?** Random repeated sequences, from tokens the model's copying was trained on and from
# tokens it never saw repeated.
# %%
from tutorial_lib.zoo.copying import copying_contrast

contrast = copying_contrast(model)
reading.see(contrast.reading(), model=model)
from tutorial_lib.studies.spectral_claims import copying_claim

_ = check(*copying_claim(contrast).as_args())
contrast.table()
# %% [markdown]
# The contrast reads each head's **induction score** on `BOS, x1 … xL, x1 … xL` (`T = 2L + 1`): a token at
# second-pass position `q` (`L+1 … 2L`) first occurred at `q − L`, so an induction head looks at `q − L + 1`.
#
# **Exercise 7** (medium, 10 min). Write `induction_scores(pattern, length)`: `pattern` is one layer's attention,
# `[n, n_heads, T, T]` (query × key), `length` is `L`. Return `[n_heads]`: the mean over sequences and over the
# second-pass queries of the attention on key `q − L + 1`.
#
# <details><summary>Hint</summary>
#
# `q = torch.arange(L + 1, 2 * L + 1)`; `pattern[:, :, q, q - L + 1]` picks one key per query (`[n, n_heads, L]`);
# average over dims 0 and 2. (ARENA's `pattern.diagonal(-(L - 1))` trick takes two first-pass queries too.)
# </details>
# %%
def induction_scores(pattern, length):
    # BEGIN SOLUTION: q = arange(L+1, 2L+1); pattern[:, :, q, q - L + 1].mean over sequences and queries
    q = torch.arange(length + 1, 2 * length + 1)
    return pattern[:, :, q, q - length + 1].mean((0, 2))
    # END SOLUTION


from tutorial_lib.zoo.copying import copy_token_sets

checks.check_induction_scores(induction_scores, model, copy_token_sets(model).trained)
# %% [markdown]
# **The same heads in notebook 01.** In `… 1732 to the year 17` the final `" 17"` repeats, followed earlier by `YY`:
# attending there is induction. Are the filtered heads in 01's circuit?
# %%
from tutorial_lib.studies.spectral_circuit import greater_than_overlap

# notebook 01's search, on as many of its prompts as notebook 01 uses on this model and device
from tutorial_lib.studies.comparing import PATH_SEARCH_LABEL, PATH_SEARCH_PROMPTS

n_gt = sizes.pick(PATH_SEARCH_LABEL, **PATH_SEARCH_PROMPTS, model=model)
gt = greater_than_overlap(model, found.heads, n_prompts=n_gt) if found.heads else None
if gt is None:
    print("no head passes the induction filter, or this model's tokenizer cannot build greater-than prompts: "
          "nothing to compare")
else:
    print({h: f"{100 * v:.0f}%" for h, v in gt.attention_yy.items()})
    reading.see(gt.reading(), model=model)
# %% [markdown]
# **Step 1 on real training**: the zoo model's 12 shipped checkpoints. Do its induction heads rank high?
# %%
from tutorial_lib.studies.spectral_loaded import checkpoint_prs, zoo_name
from tutorial_lib.zoo.store import has_checkpoints

name_m = zoo_name(model)
if name_m is not None and has_checkpoints(name_m):
    steps_m, tokens_m, pr_m = checkpoint_prs(name_m, model, probe_m)
    integral_m = pr_integral(pr_m, tokens_m)
    ranking_m = [h for h, _ in rank_heads(integral_m)]
    print("checkpoint steps:", steps_m)
    integral_ranking_figure(integral_m, top_k=12, highlight=found.heads, highlight_label="induction heads (step 2)").show()
    ranks_m = {h: ranking_m.index(h) + 1 for h in found.heads}
    figures_m = {"n_checkpoints": len(steps_m), "pr_ranks": ranks_m, "pr_first": ranking_m[0]}
    k_m, k_s = len(ranks_m), len(ind_heads)
    top_m = sum(r <= k_m for r in ranks_m.values())  # induction heads among the top len(induction heads) of the ranking
    top_s = sum(ranking.index(h) < k_s for h in ind_heads)
    reading.see(f"{len(steps_m)} checkpoints (steps {steps_m[0]}–{steps_m[-1]}): {ranking_m[0]} ranks first. "
                + (f"Induction heads: " + ", ".join(f"{h} {k}" for h, k in ranks_m.items())
                   + f" of {len(ranking_m)}, {top_m} in the top {k_m}. " if ranks_m else "")
                + f"First small model: " + ", ".join(str(ranking.index(h) + 1) for h in ind_heads)
                + f" of {len(ranking)}, {top_s} in the top {k_s}. "
                + ("Step 1 ranks them higher here." if ranks_m and top_m / k_m > top_s / max(k_s, 1) else
                   "Step 1 does not rank them higher here." if ranks_m else ""))
else:
    figures_m = {}
    print(f"{name_m or 'this model'} ships no training checkpoints: step 1 ran on the notebook's own runs (and, with the "
          "hub, on Pythia's checkpoints at the top).")
# %%
from tutorial_lib.course.record import record

figures_gt = ({"greater_than_circuit": gt.circuit, "greater_than_shared": gt.shared, "greater_than_prompts": gt.n_prompts}
              if gt is not None else {})
_ = record("03", **found.readme_figures(name_m or model.cfg.model_name, probe_m.tokens.shape[0]), **figures_m,
           **figures_gt)  # README
# %% [markdown]
# ## 9. What this shows, and what it doesn't (~5 min)
#
# * With the paper's choices the three steps agree on the small models; section 7 shows which choices weaken them.
# * The control is thin: it supports a causal reading, not a proof.
# * Induction must be measured where it could fail: on tokens training never repeated.
# * A head's label is the probe's; repeat-only models are not comparable on counts.
# * The PR integral screens, selectivity names the pattern, only ablation against controls makes a causal claim.
# %%
reading.subject("the small models this notebook trains")
reading.answer(
    "The numbers behind these points, small models", f"Small models. Candidate ({first.name}): top-1 {100 * result.baseline['top1']:.0f}% → {100 * result.candidate['top1']:.1f}%, "
    f"matched random {100 * result.control_mean():.1f}% ({result.n_distinct_controls} distinct draw(s) of "
    f"{result.n_possible_controls} possible), upper bound {100 * result.upper_bound['top1']:.1f}%, p = {result.p_value:.2g}. "
    "Induction circuits: " + "; ".join(f"{n} {sum(c == 'induction' for c in cl.values())} heads" for n, cl in classes_by_run.items())
    + ". Specialised: " + ", ".join(f"{n} {100 * f['fraction']:.0f}%" for n, f in frac.items())
    + " (paper: 17–19%). Seed-specific: " + ("yes" if specific else "no") + " (paper: yes). PR before selectivity: "
    + ", ".join(f"{k} {v}" for k, v in order_counts.most_common()) + f". PR integral: {ranking[0]} ranks first "
    + (f"and the best induction head ranks {best_rank + 1} of {len(ranking)}." if ind_heads else "and no head passes 50×."))
reading.subject(None)
reading.answer(
    "The numbers behind these points, the loaded model", "Loaded model (section 8): " + found.summary() + f". Copying check: {contrast.trained.drop:.1f} nats and "
    f"{len(contrast.trained.heads)} head(s) on the trained tokens, {contrast.held_out.drop:.1f} nats and "
    f"{len(contrast.held_out.heads)} on the held-out ones."
    + (f" Shared with the greater-than circuit: {len(gt.shared)} of {len(found.heads)}." if gt is not None else ""))
# %% [markdown]
# ### The claims of this notebook
# %%
from tutorial_lib.course import claims

claims.summary("03", record_as="03", model=model)
