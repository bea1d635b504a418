# %% [markdown]
# # 03 · The spectral probe recipe: watch induction heads form, find them without labels, prove them causal
#
# Xu (2026), "Spectral probe-circuits: a three-step recipe for identifying attention-head circuits",
# finds head circuits in three steps that need no labelled task:
#
# 1. **spectral**: over training checkpoints, measure each head's *participation ratio* (PR, an effective
#    number of dimensions its output uses); heads whose PR stays high for long are doing content-dependent
#    work. Rank heads by the integral of that signal;
# 2. **selectivity**: on a *planted-pair probe* (`… A B … A`), measure which attention pattern each head
#    implements (induction, previous-token, duplicate, BOS, self, local) and classify it;
# 3. **causal**: ablate the candidate heads together and compare with layer-matched random heads (several
#    draws) and with the upper bound (every head of those layers).
#
# **Learning objectives**: by the end of this notebook you can
# 1. compute a participation ratio, follow it over training, integrate it and rank heads by it;
# 2. measure attention-pattern selectivity on a planted-pair probe and classify heads with thresholds;
# 3. test a candidate circuit against a layer-matched random control and an upper bound, and say what the
#    verdict does and does not show;
# 4. check the textbook dependency (previous-token head → induction head) and whether circuits are seed-specific;
# 5. watch a circuit form while a model trains.
#
# | section | time |
# | --- | --- |
# | 0. Setup | 5 min |
# | 1. Train small models and watch them (live monitor) | 10 min (about 5 min of CPU) |
# | 2. Step 1: participation ratio (exercise 1) | 20 min |
# | 3. Step 2: selectivity (exercise 2) | 20 min |
# | 4. Step 3: causal verification (exercise 3) | 20 min |
# | 5. Previous-token → induction, seeds, sizes, timing | 20 min |
# | 6. The ablation panel | 10 min |
# | 7. What this shows, and what it doesn't | 5 min |
#
# *Which numbers are whose.* Xu (2026) studied GPT-2 and Pythia models (124M–410M parameters). Its
# findings are quoted below, marked **paper**: an induction circuit of 3–6 heads that is causally necessary
# in every model studied; about 17–19% of heads specialised across 124M–410M; circuits that differ from
# seed to seed; the spectral signal rising *before* selectivity crosses its threshold; and the GPT-2 124M
# anchor: ablating the top-6 heads takes induction top-1 accuracy from 16.1% to 0.85%, while matched random
# heads leave 10.6%. Every other number is one **this notebook measures** on the tiny models it trains
# itself (2 layers, attention only). They describe those models, not GPT-2 or Pythia.
# %% [markdown]
# ## 0. Setup (~5 min)
# %% tags=course-install
from tutorial_lib import setup

env = setup(seed=0)
# %%
import torch

from tutorial_lib import load_model

torch.set_num_threads(1)  # tiny models gain nothing from more threads, and they slow a busy CPU down
MODEL_NAME = "auto"
model = load_model(MODEL_NAME)  # only to show what "auto" gives; this notebook trains its own models
USE_HUB = getattr(model.cfg, "original_architecture", None) is not None  # True for GPT-2 / Pythia from the hub
print("hub model loaded:", USE_HUB)
# %% [markdown]
# **With the hub** (skipped offline). The paper's spectral step reads *training checkpoints*. Pythia
# publishes 154 of them, and TransformerLens loads one with `checkpoint_index`. The cell below runs step 1
# on a few Pythia-70m checkpoints with the same library functions you will use on the zoo models. It only
# runs when `USE_HUB` is true.
# %%
if USE_HUB:
    from tutorial_lib.course import sizes
    from tutorial_lib.methods.selectivity import PlantedPairProbe, selectivity
    from tutorial_lib.methods.spectral import head_participation_ratios, pr_integral, rank_heads
    from tutorial_lib.tasks.induction import make_planted_pair_batch

    pythia_pr, pythia_tokens = [], []
    n_ckpt = sizes.pick("Pythia-70m checkpoints", full=5, cpu=5, quick=2)  # each is a ~160 MB download
    CHECKPOINTS = (10, 40, 80, 120, 153) if n_ckpt == 5 else (10, 153)  # checkpoint_index into Pythia's 154 saved steps
    for idx in CHECKPOINTS:
        pythia = load_model("pythia-70m", checkpoint_index=idx)
        batch = make_planted_pair_batch(pythia.tokenizer, n=sizes.pick("probe sequences", full=128, cpu=128, quick=16, verbose=False), seq_len=64, seed=0)
        hub_probe = PlantedPairProbe.from_tokens(batch.clean, drop_invalid=True)
        pythia_pr.append(head_participation_ratios(pythia, hub_probe))
        pythia_tokens.append(pythia.cfg.checkpoint_value * 2_097_152)  # tokens seen: step × (1024 × 2048 per step)
    pythia_integral = pr_integral(torch.stack(pythia_pr), pythia_tokens, x="tokens")
    print("checkpoints at steps", [t // 2_097_152 for t in pythia_tokens])
    print("top heads by PR integral:", rank_heads(pythia_integral, 6))
    print("induction selectivity (final):", selectivity(pythia, hub_probe)["induction"].max())
# %% [markdown]
# ## 1. Train small models and watch them (~10 min)
#
# Offline we train our own: 2-layer attention-only transformers on random symbols where short segments
# repeat at random distances, so the only way to predict the repeated tokens is induction (see
# `tutorial_lib.zoo.induction_models`). The recipe there is rotary positions, 128 symbols, 3 repeated
# segments of 2–8 tokens in 48-token sequences. Two sizes, both with 4 heads of width 16 per layer and
# d_model 64: **small** (2 layers, 8 heads) and **deep** (3 layers, 12 heads). (The module also has a
# **large** size, 8 heads per layer and d_model 128; within 1000 steps it does not form the pair reliably —
# in one of four of our runs it had not — so this notebook leaves it out.)
#
# To keep the notebook within a few CPU minutes we train only **two seeds of the small size and one of the
# deep size, 1000 steps each (about 1-1.5 CPU minutes each)**. The paper used many more seeds and real language models;
# everything below about "seeds" and "sizes" is therefore a small sample, and the notebook says so where it
# matters.
#
# The **probe** is the planted-pair batch of step 2 (`BOS r … r A B r … r A`): the spectral monitor reads
# it at every checkpoint.
# %%
from tutorial_lib.studies.spectral import planted_probe, train_or_load

probe = planted_probe(n=256, seq_len=48, seed=0)
print(f"probe: {probe.n} sequences of {probe.seq_len} tokens (rows whose earlier A sat in the last 6 positions dropped)")
SMALL_SEEDS, DEEP_SEEDS = (1, 2), (1,)
STEPS = {"small": 1000, "deep": 1000}
# %% [markdown]
# Training calls a `SpectralMonitor` at 12 log-spaced checkpoints. At each one it runs the probe, records
# every head's PR and selectivity, and redraws the figure below: left, PR per head; right, induction
# selectivity (log scale). Watch the layer-1 heads: for a while nothing happens, then within a few dozen
# steps their induction selectivity shoots up by two orders of magnitude. Runs are cached, so running the
# cell again does not retrain (set `TUTORIAL_CACHE` to choose where).
# %%
runs = {}
for size, seeds in (("small", SMALL_SEEDS), ("deep", DEEP_SEEDS)):
    for seed in seeds:
        run = train_or_load(size, seed, STEPS[size], probe)
        runs[run.name] = run
        print(run.summary())
# %% [markdown]
# Did the textbook pair form? `check_induction_pair` measures, on held-out sequences, every layer-0 head's
# attention to the previous token, every layer-1 head's attention to the token after the earlier
# occurrence, and the loss with the previous-token heads ablated. The assert below is the course's claim
# about the recipe for the **small** size: within 1000 steps the pair forms in both small seeds (with a
# 600-700-step schedule the learning rate decays too early and, in our runs, some seeds never left the
# loss plateau). The deep model's row says whether the pair formed there too, and in which layers; the
# analyses below that need a formed circuit skip any run where it did not.
# %%
for name, run in runs.items():
    p = run.pair
    print(f"{name:14s} formed={p['formed']!s:5s} loss {p['loss']:.3f} → {p['loss_prev_ablated']:.2f} nats with the "
          f"previous-token head(s) {p['prev_heads']} ablated (control {p['control_heads']}: {p['loss_control_ablated']:.2f})")
formed = [n for n, r in runs.items() if r.formed]
print("pair formed in:", formed, "| not formed in:", [n for n in runs if n not in formed])
from tutorial_lib.course.claims import claim

claim(all(runs[n].formed for n in runs if n.startswith("small")), "the induction pair did not form in every small seed")
# %% [markdown]
# ## 2. Step 1: participation ratio (~20 min)
#
# Take one head, run the probe, and stack its output at the final position (the second `A`) over the
# examples into a matrix `X` of shape `[n_examples, d_head]` (the head's `hook_z`, before `W_O`, as the
# paper's public code does; not mean-centred). With singular values σᵢ of `X` and `pᵢ = σᵢ² / Σⱼ σⱼ²`, the
# **participation ratio** is
#
# $$\mathrm{PR} = \exp\Big(-\sum_i p_i \log p_i\Big)$$
#
# (the exponential of the spectral entropy, the public code's definition). The paper's written summary
# gives the second-order version `(Σλ)² / Σλ²` with λ the eigenvalues of `XᵀX/n`; both equal k for k equal
# directions and ≈ 1 when one direction dominates. The library offers both
# (`definition="exp_entropy"` or `"order2"`). A head that writes the same vector for every input has
# PR ≈ 1; an induction head copying a different `B` each time writes different vectors: high PR.
#
# **Exercise 1.** Write `participation_ratio(X)` with the exp-entropy definition. (Terms with pᵢ = 0
# contribute 0; `torch.linalg.svdvals` gives the singular values.)
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
# The monitor already recorded every head's PR at every checkpoint. Here are the trajectories of the
# first small run (x: tokens seen, log scale). At random initialisation every head's output is a random
# projection of its input, so the PR starts high; it collapses early, while the heads learn a fixed pattern
# (e.g. attend to BOS). It rises again in the heads that start copying content.
# %%
from tutorial_lib.viz.spectral import integral_ranking_figure, pr_trajectory_figure

first = runs[f"small seed {SMALL_SEEDS[0]}"]
mon = first.monitor
pr_trajectory_figure(mon.pr, mon.tokens_seen, title=f"Participation ratio over training ({first.name})").show()
# %% [markdown]
# The **integral** `I(L,H) = ∫ max(PR − 1, 0) d log(tokens)` (trapezoid rule over the checkpoints) sums how
# much extra dimension a head held, and for how long. It ranks heads; it does *not* say what they do.
# The red bars are the heads step 2 will call induction heads.
# %%
from tutorial_lib.methods.selectivity import classify_heads, induction_circuit, selectivity
from tutorial_lib.methods.spectral import pr_integral, rank_heads

integral = pr_integral(mon.pr, mon.tokens_seen)
sel = selectivity(first.model, probe)
print("ranking by I(L,H):", ", ".join(f"{h} {v:.1f}" for h, v in rank_heads(integral)))
integral_ranking_figure(integral, top_k=8, highlight=induction_circuit(sel), highlight_label="induction heads (step 2)").show()
# %% [markdown]
# The order-2 definition orders heads much the same way here. Compare the two rankings:
# %%
from tutorial_lib.methods.spectral import head_participation_ratios

pr_e = head_participation_ratios(first.model, probe, definition="exp_entropy")
pr_2 = head_participation_ratios(first.model, probe, definition="order2")
print("final PR, exp-entropy:\n", pr_e.round(decimals=2), "\nfinal PR, order-2:\n", pr_2.round(decimals=2))
# %% [markdown]
# ## 3. Step 2: attention-pattern selectivity (~20 min)
#
# At the query position (the final `A`) each canonical pattern names a key position: **induction** → the
# `B` after the earlier `A`; **previous-token** → `T−2`; **duplicate** → the earlier `A`; **BOS** → 0;
# **self** → `T−1`; **local** → the mean over `T−3 … T−6`. A head's **selectivity** for a pattern is its mean
# attention to that position divided by its mean attention to *baseline* positions (50 random positions
# per example that are none of those targets). Uniform attention gives 1×.
#
# **Exercise 2.** Write `induction_selectivity(att, a_pos, base_pos)`: `att` is `[n, n_layers, n_heads, T]`
# (each head's attention row at the query), `a_pos` is `[n]` (the earlier `A`), `base_pos` is `[n, k]`.
# Return `[n_layers, n_heads]`: (mean over examples of the attention to `a_pos + 1`) ÷ (mean over examples
# and baseline positions of the attention to `base_pos`).
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
# All six patterns, every head, the first small run. Dots mark selectivity ≥ 30×.
# %%
from tutorial_lib.viz.spectral import selectivity_heatmaps

selectivity_heatmaps(sel, threshold=30).show()
# %% [markdown]
# The same thing seen directly: every layer-1 head's attention on one probe sequence (tokens are symbol
# ids). Hover over the last token, the second `A`: an induction head lights up the token *after* the
# earlier `A`; in layer 0, a previous-token head draws the diagonal just below the main one.
# %%
from tutorial_lib.viz.figures import attention_view

attention_view(first.model, probe.tokens[:1], layer=1)
# %% [markdown]
# **Classification** (the paper's rule): a head takes its most selective pattern if that selectivity is at
# least `CLASS_THRESHOLD` (30×); the induction circuit is every head with induction selectivity of at least
# `INDUCTION_THRESHOLD` (50×). Change the thresholds and re-run to see how robust the classes are.
# %%
CLASS_THRESHOLD, INDUCTION_THRESHOLD = 30.0, 50.0
for name, run in runs.items():
    s = selectivity(run.model, probe)
    classes = classify_heads(s, CLASS_THRESHOLD, INDUCTION_THRESHOLD)
    print(f"{name}: induction circuit {', '.join(induction_circuit(s, INDUCTION_THRESHOLD)) or 'none'}")
    for h, c in classes.items():
        if c != "unclassified":
            l, hh = int(h[1:].split(".")[0]), int(h.split(".h")[1])
            print(f"    {h}  {c:15s} {float(s[c][l, hh]):8.0f}×")
    print(f"    ({sum(c == 'unclassified' for c in classes.values())} of {len(classes)} heads unclassified)")
# %% [markdown]
# ## 4. Step 3: is the candidate circuit causal? (~20 min)
#
# Ablating *any* few heads of a 2-layer model hurts, so the number that matters is the comparison. A
# **layer-matched random control** ablates, in each layer, as many heads as the candidate has there, chosen
# at random among the other heads, with several seeds. The **upper bound** ablates every head of those
# layers.
#
# **Exercise 3.** Write `layer_matched_control(heads, n_heads, seed)`: for each layer that `heads` (names
# like `"a1.h3"`) touches, draw as many heads of that layer, none of them in `heads`, with a seeded random
# generator. Return a list of names.
# %%
import numpy as np


def layer_matched_control(heads, n_heads, seed):
    # BEGIN SOLUTION: count heads per layer; per layer, rng.choice(non-candidate heads, size=count, replace=False)
    rng = np.random.default_rng(seed)
    layers = {}
    for h in heads:
        layers.setdefault(int(h.split(".")[0][1:]), []).append(h)
    out = []
    for layer, chosen in sorted(layers.items()):
        pool = [f"a{layer}.h{i}" for i in range(n_heads) if f"a{layer}.h{i}" not in heads]
        out += list(rng.choice(pool, size=len(chosen), replace=False))
    return out
    # END SOLUTION


checks.check_matched_control(layer_matched_control)
# %% [markdown]
# Now the verification, on the first small run. The candidate is step 2's induction circuit: the induction
# heads (≥ 50×) and the layer-0 previous-token heads (≥ 30×) that feed them. A layer-matched control must
# draw as many *other* heads of each layer, so `candidate_circuit` keeps at most half of a layer's heads
# (the most selective). With 4 heads per layer that leaves few distinct controls (the verdict counts them),
# and the controls' layer-1 heads are induction heads too: the comparison asks whether *these* heads matter
# more than the rest, not whether induction heads matter at all. Five control seeds (seeds that draw the
# same heads count as one draw), and a paired permutation test on the per-example loss against the mean
# of the distinct draws.
# %%
from tutorial_lib.methods.head_ablation import verify_circuit
from tutorial_lib.studies.spectral import candidate_circuit
from tutorial_lib.viz.spectral import ablation_figure

candidate = candidate_circuit(sel, first.model, INDUCTION_THRESHOLD, CLASS_THRESHOLD)
result = verify_circuit(first.model, candidate, probe, n_control_seeds=5, seed=0)
print(result.table())
print(result.verdict)
ablation_figure(result).show()
# %% [markdown]
# The paper frames the verdict the same way: a circuit is causal when its ablation destroys induction far
# beyond matched random heads (**paper**, GPT-2 124M: top-6 heads, 16.1% → 0.85%, matched random 10.6%).
# The check is this notebook's claim on its own small run: the candidate's drop beats every control draw
# and p < 0.05.
# %%
claim(result.causal, result.verdict)
claim(result.drop("candidate") > result.drop("control"), "candidate ablation should beat the matched-random control")
# %% [markdown]
# ## 5. Previous-token → induction, seeds, sizes and timing (~20 min)
#
# **The textbook dependency.** An induction head finds "the token after the earlier `A`" through the
# previous-token head's output (K-composition). Ablate the layer-0 previous-token heads and measure the
# induction heads' selectivity and the accuracy again, next to matched random layer-0 heads.
# %%
from tutorial_lib.methods.head_ablation import prev_token_dependency
from tutorial_lib.studies.spectral import prev_token_heads

dep_rows = {}
for name, run in runs.items():
    if not run.formed:
        print(f"{name:14s} skipped: the induction pair did not form in this run")
        continue
    s = selectivity(run.model, probe)
    # at most half of layer 0, so that the matched control can draw as many other layer-0 heads
    prev = prev_token_heads(s, CLASS_THRESHOLD, max_heads=run.model.cfg.n_heads // 2) or [run.pair["prev_heads"][0]]
    ind = induction_circuit(s, INDUCTION_THRESHOLD) or [run.pair["induction_head"]]
    dep = prev_token_dependency(run.model, prev, ind, probe, n_control_seeds=3)
    c = dep["conditions"]
    ctrl = np.mean([v["top1"] for k, v in c.items() if k.startswith("matched")])
    dep_rows[name] = (c["none"]["top1"], c["previous-token heads"]["top1"], ctrl)
    print(f"{name:14s} prev-token heads {prev}: induction top-1 {100 * c['none']['top1']:.0f}% → "
          f"{100 * c['previous-token heads']['top1']:.0f}% (matched random layer-0 heads: {100 * ctrl:.0f}%)")
# %%
for name, (none, prev_ablated, ctrl) in dep_rows.items():
    claim(prev_ablated < ctrl and prev_ablated < 0.5 * none, f"{name}: ablating previous-token heads did not destroy induction")
# %% [markdown]
# **Seed specificity.** The two small seeds were trained on the same data stream with different
# initialisations. Ablate each seed's induction circuit in both models (heads are matched by name). The
# **paper** reports circuits that differ from seed to seed; in a 4-head layer where most heads become
# induction heads, the overlap may be large. Read the diagonal (own circuit) against the off-diagonal.
# %%
from tutorial_lib.methods.head_ablation import cross_seed_ablation

small = {n: r for n, r in runs.items() if r.size == "small"}
circuits = {n: induction_circuit(selectivity(r.model, probe)) for n, r in small.items()}
print("circuits:", circuits)
table = cross_seed_ablation({n: r.model for n, r in small.items()}, circuits, probe)
for model_name, row in table.items():
    print(f"model {model_name:14s}", {k: f"{100 * v:.0f}%" for k, v in row.items()})
# %% [markdown]
# **Fraction of specialised heads** (any class at the thresholds above), per size. The **paper** finds
# about 17–19% across 124M–410M; our models have 8 or 12 heads, so one head is 12.5% or 8%.
# %%
from tutorial_lib.methods.selectivity import specialised_fraction_across

frac = specialised_fraction_across({n: (r.model, probe) for n, r in runs.items()}, CLASS_THRESHOLD, INDUCTION_THRESHOLD)
for name, f in frac.items():
    print(f"{name:14s} {f['n_specialised']}/{f['n_heads']} heads specialised ({100 * f['fraction']:.0f}%)")
# %% [markdown]
# **Does the PR rise before selectivity crosses its threshold?** For each induction head, `emergence_timing`
# gives the checkpoint where its PR has climbed half-way from its minimum to its final value, and the
# checkpoint where induction selectivity first reaches 50×. The **paper** reports the spectral signal
# first. With 12 checkpoints per run the resolution is coarse: "same checkpoint" is a common answer.
# %%
from tutorial_lib.methods.spectral import emergence_timing
from tutorial_lib.studies.spectral import pr_rises_first

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
        print(f"    {h}  PR rises at {pr_step!s:>5}, selectivity ≥ {INDUCTION_THRESHOLD:g}× at {sel_step!s:>5}  → {order}")
# %% [markdown]
# ## 6. The ablation panel (~10 min)
#
# Toggle heads of the first small model off and watch induction on the probe (loss on `B` and accuracy). Try the
# presets, then find the smallest set of heads that destroys induction. Is it the candidate circuit? What
# does ablating one previous-token head do?
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
# ## 7. What this shows, and what it doesn't (~5 min)
#
# * On the small models the three steps agree: the layer-1 heads that step 2 calls induction heads (≥ 50×)
#   are the ones whose PR climbs, and ablating the candidate circuit (two previous-token and two induction
#   heads) destroys induction far beyond the matched control (in our run: top-1 100% → 7%, control 64%,
#   upper bound 1%; p ≈ 1e-4). Ablating the previous-token heads alone destroys induction too.
# * Be honest about the control: with 4 heads per layer the layer-matched control had only **one** distinct
#   draw, and its layer-1 heads are induction heads as well. More heads per layer (the module's large size)
#   would give real choice, but that size needs more training than this notebook can afford.
# * In these models *every* layer-1 head becomes an induction head, in both seeds: the circuits are the same
#   by name, so the cross-seed ablation shows no seed specificity (the **paper** reports seed-specific
#   circuits in real models), and 100% of the small models' heads are "specialised" (the **paper**: 17–19%).
#   The deep model forms the same pair in layers 0-1 and leaves its third layer idle: 8 of its 12 heads
#   (67%) are specialised in our run. Models trained on nothing but induction are not comparable to language
#   models on these counts.
# * The timing question is answered per head, at a coarse grid of 12 checkpoints: in our runs the PR rose
#   before selectivity crossed 50× in 11 of 12 induction heads (7 of 8 in the small models, 4 of 4 in the
#   deep one), as the **paper** reports.
# * The PR integral says a head's output varies with content, not *which* content (here the layer-0 heads
#   rank as high as the induction heads). It is a cheap screen; selectivity names the pattern; only ablation
#   against controls makes a causal claim, and only for the metric and the probe used.
# * Two small seeds and one deep run are a small sample: run more seeds or steps if you have time.
