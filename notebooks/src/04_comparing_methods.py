# %% [markdown]
# # 04 · One task, several methods, one yardstick: which circuit is better?
#
# Notebooks 01–03 each found circuits their own way (path patching, Hanna, Liu & Variengien 2023; per-example
# EAP, Li & Subramani 2026; a spectral recipe, Xu 2026). Do the methods *agree*, and which circuit is *better*?
# This notebook answers both for one task and model, as the circuit track of the MIB benchmark (Mueller et al.
# 2025) scores circuits:
#
# * four methods: notebook 01's **path-patching search**, **EAP** averaged over the dataset, **EAP-IG** (Hanna,
#   Pezzelle & Belinkov 2024), and **exact activation patching** of every node alone (not a ground truth: nodes
#   interact);
# * one yardstick: the **faithfulness** f of a circuit (1: the whole model, 0: the corrupted run) at sizes from
#   0.1% to 100% of the edges, summarised by **CPR** and **CMD** against random circuits
#   ([glossary](00_start_here.ipynb#glossary));
# * agreement: overlap of the circuits against chance; and the same heads as notebooks 01–03 saw them.
#
# <details><summary>Learning objectives</summary>
#
# By the end of this notebook you can
# 1. say what EAP-IG changes in EAP, compute one of its steps, and check that m = 1 gives EAP back;
# 2. define the faithfulness of a circuit by edge patching, and write edge patching with hooks;
# 3. read a faithfulness curve against a random band, compute CPR and CMD, and say how the x-axis changes them;
# 4. draw a random circuit of a given size, as the random band does;
# 5. compare circuits by overlap against chance, and say what agreement does and does not show;
# 6. save a circuit as JSON and map its names to the EAP-IG library's and MIB's;
# 7. connect one circuit's heads to what notebooks 01–03 saw in them.
#
# </details>
#
# | section | exercise (difficulty, time to write) | time |
# | --- | --- | --- |
# | 0. Setup | — | 5 min |
# | 1. Four methods, one task | 1: one EAP-IG step (★★★, 20 min) | 30 min |
# | 2. Faithfulness | 2: edge patching (★★★, 30 min) | 35 min |
# | 3. Faithfulness curves, CPR and CMD | 3: CPR and CMD (★, 10 min); 4: a random circuit (★★, 10 min) | 35 min |
# | 4. Do the methods agree? | 5: overlap against chance (★★, 15 min) | 25 min |
# | 5. The panel | — | 10 min |
# | 6. Exchange: circuits as JSON | — | 5 min |
# | 7. What this tells us | — | 5 min |
# | 8. One circuit, four studies | — | 10 min |
#
# ★ a few lines from a formula; ★★ a short algorithm with a seed or a law to respect; ★★★ hooks and gradients.
# Each exercise names the library calls it needs; a hint is folded under it. Numbers marked **paper** are quoted
# from the EAP-IG paper and MIB (GPT-2 small and larger models); every other number is measured here, on the model
# this notebook loads (offline: the course's zoo model, and they describe that model only).
# %% [markdown]
# ## 0. Setup: model, task, settings (~5 min)
# %% tags=course-install
from tutorial_lib import setup

env = setup(seed=0)
# %%
import torch

from tutorial_lib import load_model

# "auto": GPT-2 small online, the zoo model offline; any of the papers' families works too ("qwen3-0.6b",
# "llama-3.2-1b", "gemma-2-2b", "olmo-2-1b", "pythia-160m" ...: valid_names() lists them)
MODEL_NAME = "auto"
model = load_model(MODEL_NAME)
if env.device == "cpu" and model.cfg.d_model < 512:
    torch.set_num_threads(1)  # a small model gains nothing from more CPU threads
# %% [markdown]
# The task is greater-than (notebook 01): "The war lasted from the year 1732 to the year 17"; the metric is the
# probability difference (years above YY minus at or below). On the corrupted prompts ("from the year 1701") it is
# strongly negative, not 0. `TASK = "ioi"` runs indirect object identification instead, as does a tokenizer
# without GPT-2's year tokens (Llama 3, Qwen3, Gemma 2).
# %%
from tutorial_lib.course import sizes
from tutorial_lib.tasks import TaskNotBuildable, make_task

TASK = "greater_than"  # or "ioi"
N_EXAMPLES = sizes.pick("examples", full=64, cpu=16, quick=8, model=model)
try:
    task = make_task(TASK, model.tokenizer, n=N_EXAMPLES, seed=0)
except TaskNotBuildable as why:  # e.g. greater-than on a tokenizer without GPT-2's year tokens
    print(f"{TASK} cannot be built for {model.cfg.model_name}: {why}\n-> this notebook uses IOI instead.")
    TASK = "ioi"
    task = make_task(TASK, model.tokenizer, n=N_EXAMPLES, seed=0)
with torch.no_grad():
    m_clean, m_corrupt = task.metric(model(task.clean)).mean().item(), task.metric(model(task.corrupt)).mean().item()
print(f"{task.name}: {len(task)} examples; {task.metric_name} clean {m_clean:.3f}, corrupted {m_corrupt:.3f}")
# %% [markdown]
# ## 1. Four methods, one task (~30 min)
#
# ### 1.1 Path patching
#
# On greater-than: notebook 01's four-step search with its prompts (as many as notebooks 01 and 03 use on this
# device) and threshold (0.005), so it finds the circuit they report; on GPT-2 small, the paper's circuit (the
# search is slow on a CPU). On IOI, two steps: senders at END into the logits, then every sender into what step 1
# found.
# %%
from tutorial_lib.methods.path_discovery import PAPER_GREATER_THAN
from tutorial_lib.course import sizes
from tutorial_lib.studies.comparing import PATH_SEARCH_LABEL, PATH_SEARCH_PROMPTS, notebook01_search_task, path_patching_circuit

if TASK == "greater_than" and model.cfg.n_layers == 12 and model.cfg.n_heads == 12:
    pp_nodes = [c for comps in PAPER_GREATER_THAN.values() for c in comps if c != "embed"]
    pp_how = "the circuit Hanna et al. (2023) report for GPT-2 small"
elif TASK == "greater_than":  # notebook 01's prompts and threshold (notebook 03 uses the same)
    n01 = sizes.pick(PATH_SEARCH_LABEL, **PATH_SEARCH_PROMPTS, model=model)
    pp_nodes, pp_how = path_patching_circuit(model, notebook01_search_task(model, n01), progress=True)
else:
    pp_nodes, pp_how = path_patching_circuit(model, task.subset(range(min(len(task), 32))), progress=True)
print(f"path-patching circuit ({pp_how}): {len(pp_nodes)} components: {pp_nodes}")
# %% [markdown]
# ### 1.2 EAP and EAP-IG
#
# EAP (notebook 02) scores an edge s → r by
# $(\text{out}_s^{\text{corrupt}} - \text{out}_s^{\text{clean}}) \cdot \partial m / \partial \text{in}_r$, the
# gradient taken at the clean input, where a saturated metric is flat. **EAP-IG** averages the gradient over m
# points from the corrupted input embeddings to the clean ones,
# $x_k = x^{\text{corrupt}} + \tfrac{k}{m}(x^{\text{clean}} - x^{\text{corrupt}})$, k = 1 … m (integrated
# gradients). With m = 1 the only point is the clean input: EAP.
#
# <details><summary>Other model families</summary>
#
# Every method here runs on Llama 3.2, Qwen3, Gemma 2, OLMo-2, Pythia and OLMoE too (the README's table). On Gemma 2
# and OLMo-2 a norm sits on each layer's *summed* attention output, so a head's change is not additive: EAP gives a
# head's edges its change when it alone moves, $N(A + \Delta_h) - N(A)$ (as the EAP-IG library does), while path
# patching and the faithfulness curves recompute the norm exactly. The library runs EAP-IG's m points as one batch.
#
# </details>
#
# **Exercise 1 — one EAP-IG step.** Write `edge_score_at_alpha(model, task, sender, example, alpha)`: the score of
# the edge `sender → logits` for one example, with the gradient of the task's metric taken at the input
# $x^{\text{corrupt}} + \alpha(x^{\text{clean}} - x^{\text{corrupt}})$. Replace the block-0 input
# (`blocks.0.hook_resid_pre`) by the interpolated one with a hook, keep the final residual stream
# (`blocks.{L-1}.hook_resid_post`) to take the gradient there, and multiply by the sender's output difference
# (corrupted minus clean, each from its own run) summed over positions and `d_model`.
#
# The check averages your function over α = 1/3, 2/3, 1 and compares it with the library's EAP-IG with m = 3. You
# need `sender_output` (below), `model.hooks(fwd_hooks=[(name, fn), ...])`, `task.subset([example]).metric(logits)`
# and `torch.autograd.grad`.
#
# <details><summary>Hint (click to open)</summary>
#
# Get `x_clean` and `x_corrupt` with `sender_output(model, tokens, "embed")`. One hook on `blocks.0.hook_resid_pre`
# returns `x_corrupt + alpha * (x_clean - x_corrupt)`; a second on the last `hook_resid_post` stores its input and
# calls `act.retain_grad()`. Run `model(clean)` inside `model.hooks(...)`, take the metric's `.sum()`, and
# `torch.autograd.grad(metric, stored)`; the score is `(delta * grad).sum().item()`.
#
# </details>
# %%
from tutorial_lib.course import checks


def sender_output(model, tokens, sender):
    """A sender's output as written into the residual stream, [batch, pos, d_model]."""
    with torch.no_grad():
        _, cache = model.run_with_cache(tokens)
    if sender == "embed":
        return cache["blocks.0.hook_resid_pre"]
    if sender.startswith("m"):
        return cache[f"blocks.{sender[1:]}.hook_mlp_out"]
    layer, head = (int(x[1:]) for x in sender.split("."))
    return cache[f"blocks.{layer}.attn.hook_z"][:, :, head] @ model.blocks[layer].attn.W_O[head]


def edge_score_at_alpha(model, task, sender, example, alpha):
    clean, corrupt = task.clean[example:example + 1], task.corrupt[example:example + 1]
    # BEGIN SOLUTION: interpolate the block-0 input, take d metric / d final residual, dot with the sender's difference
    x_clean = sender_output(model, clean, "embed")
    x_corrupt = sender_output(model, corrupt, "embed")
    delta = sender_output(model, corrupt, sender) - sender_output(model, clean, sender)
    kept = {}

    def interpolate(act, hook):
        return x_corrupt + alpha * (x_clean - x_corrupt)

    def keep(act, hook):
        kept["final"] = act
        act.retain_grad()
        return act

    final_hook = f"blocks.{model.cfg.n_layers - 1}.hook_resid_post"
    with model.hooks(fwd_hooks=[("blocks.0.hook_resid_pre", interpolate), (final_hook, keep)]):
        logits = model(clean)
    metric = task.subset([example]).metric(logits).sum()
    grad, = torch.autograd.grad(metric, kept["final"])
    return (delta * grad).sum().item()
    # END SOLUTION


checks.check_ig_step(edge_score_at_alpha, model, task)
# %% [markdown]
# Now the library's EAP and EAP-IG on every edge and example. First, m = 1 *is* EAP: your `edge_score_at_alpha`
# at α = 1 against the library's EAP score of the same edge; then how far EAP-IG moves the scores:
# %%
from tutorial_lib.methods.attribution import eap_scores

IG_STEPS = 5  # a few points; each one more pass (the completeness table below shows how far m = 5 gets)
eap = eap_scores(model, task, metric="metric", batch_size=16, progress=False)
ig = eap_scores(model, task, metric="metric", batch_size=max(1, 16 // IG_STEPS), progress=False, ig_steps=IG_STEPS)
s0 = int(eap.edges[:, 1:, -1].abs().mean(0).argmax()) + 1  # the largest sender -> logits edge (not the embedding)
top = eap.graph.senders[s0]
at_one = [edge_score_at_alpha(model, task, top, i, 1.0) for i in range(3)]
print(f"{top} -> logits (EAP's largest edge into the logits), examples 0-2: yours at alpha = 1 "
      f"{[round(v, 5) for v in at_one]}, library's EAP {[round(float(v), 5) for v in eap.edges[:3, s0, -1]]}")
ratio = (ig.edges.mean(0).norm() / eap.edges.mean(0).norm()).item()
print(f"EAP-IG (m = {IG_STEPS}) vs EAP: the mean edge scores are {ratio:.1f} times larger in norm")
# %%
from IPython.display import Markdown, display

from tutorial_lib.course import reading

reading.see(
    f"At α = 1 your scores equal EAP's. EAP-IG's scores are {ratio:.1f} times EAP's ({task.metric_name} "
    f"{m_clean:.2f} on clean prompts): "
    + ("the clean run is saturated, its gradient is nearly flat, so EAP *under*-estimates patching an edge." if ratio > 2
       else "the metric is not saturated at the clean end, so its gradient says about as much as the line's average."))
# %% [markdown]
# *Completeness*, which EAP lacks: summed over receivers, the `embed` sender's EAP-IG scores tend to exactly
# metric(corrupted) − metric(clean) as m → ∞. How close each m gets, on this task:
# %%
import pandas as pd

with torch.no_grad():
    gap = (task.metric(model(task.corrupt)) - task.metric(model(task.clean))).mean().item()
STEPS = (1, 2, IG_STEPS, 10) if sizes.resolve(model) == "full" else (1, IG_STEPS)  # more m: more passes
rows = []
for m in STEPS:
    s = {1: eap, IG_STEPS: ig}.get(m) or eap_scores(model, task, metric="metric", batch_size=max(1, 16 // m), progress=False, ig_steps=m)
    rows.append({"m": m, "sum of embed's edge scores": s.edges[:, 0].sum(-1).mean().item(), "metric(corrupt) − metric(clean)": gap})
completeness = pd.DataFrame(rows).set_index("m")
display(completeness.round(4))
# %%
from tutorial_lib.studies.comparing_text import completeness_answer

reading.answer("Why is m = 1 off, and why does a larger m get closer?", completeness_answer(completeness))
# %% [markdown]
# ### 1.3 All methods at once
#
# `compare_methods` runs the rest, reusing section 1.2's scores: node rankings for EAP and EAP-IG (a node's
# signed sum of outgoing edge scores), exact node patching (each head and MLP patched alone), random circuits, and
# the faithfulness of every circuit at every size (section 3), with the time each part took.
# %%
from tutorial_lib.studies.comparing import compare_methods

from tutorial_lib.methods.faithfulness import DEFAULT_FRACTIONS, MIB_FRACTIONS

SEEDS = range(sizes.pick("random seeds", full=5, cpu=3, quick=2, model=model))
FRACTIONS = DEFAULT_FRACTIONS if sizes.resolve(model) == "full" else MIB_FRACTIONS  # 21 sizes, or MIB's 11
comparison = compare_methods(model, task, ig_steps=IG_STEPS, fractions=FRACTIONS, random_seeds=SEEDS, pp_nodes=pp_nodes,
                             pp_how=pp_how, batch_size=16, scores={"EAP": eap, "EAP-IG": ig})
print({k: f"{v:.1f} s" for k, v in comparison.seconds.items() if k not in ("path patching", "EAP", "EAP-IG")})
# %% [markdown]
# ## 2. Faithfulness: cutting the edges outside a circuit (~35 min)
#
# A circuit C is a set of edges (edge vs node circuits, faithfulness: [glossary](00_start_here.ipynb#glossary)). To
# run "only the circuit", on the clean prompts every edge *outside* C carries its sender's corrupted-run output, and
# the circuit's edges the sender's output in this patched run itself:
#
# $$\text{in}_r = \sum_{s \to r \,\in\, C} \text{out}_s^{\text{patched}} + \sum_{s \to r \,\notin\, C} \text{out}_s^{\text{corrupt}}$$
#
# $$f(C) = \frac{m(C) - m(\varnothing)}{m(M) - m(\varnothing)}$$
#
# with m(·) the metric averaged over the examples, M the whole model (the clean run) and ∅ the empty circuit (every
# edge cut: the corrupted run). So f(M) = 1 and f(∅) = 0; f > 1 when the circuit leaves out something working
# *against* the task. A circuit of **nodes** (`embed`, heads, MLPs) holds every edge among its nodes and into
# `logits`; without `embed` it has f = 0. The path-patching circuit is `embed` plus the components found.
#
# <details><summary>Edge patching and path patching</summary>
#
# Path patching (notebook 01) freezes all but one path; here the whole model runs and only the cut edges carry
# corrupted values. Cutting a single edge s → r is exactly path patching from s into r.
#
# </details>
# %%
from tutorial_lib.methods import faithfulness as fa

graph = comparison.graph
m_full, m_empty = comparison.settings["m_full"], comparison.settings["m_empty"]  # measured by edge patching
print(f"{fa.n_edges(graph)} edges in the graph ({len(graph.senders)} senders, {len(graph.receivers)} receivers)")
print(f"every edge in: {m_full:.4f} (clean run {m_clean:.4f});  no edge: {m_empty:.4f} (corrupted run {m_corrupt:.4f})")
# %% [markdown]
# **Exercise 2 — the engine: faithfulness by edge patching.** Write `faithfulness_of(model, task, circuit)` for an
# edge mask `circuit` (`[n_senders, n_receivers]`, True = in the circuit) with hooks, not `fa.patched_metric`:
# run the clean prompts, and at every receiver's input replace what each edge outside the circuit brings by its
# sender's corrupted output; return f(C). `sender_outputs` (below) collects the senders' outputs in the graph's
# order. The check is against the library's engine, to 1e-4.
#
# <details><summary>Hint 1: the idea</summary>
#
# A receiver's input is the sum of what its senders wrote (plus biases). Cutting s → r means: r's input loses the
# sender's output *in this run* and gets its corrupted output instead. m(M) is the clean run,
# m(∅) the corrupted run.
# </details>
#
# <details><summary>Hint 2: the API</summary>
#
# Inside `with engine_view(model, split_qkv=True, attn_result=True, mlp_in=True):` a head's q, k and v inputs are
# `blocks.L.hook_q_input` (`k`, `v`) `[batch, pos, head, d_model]`, an MLP's is `blocks.L.hook_mlp_in`, and the
# logits read `blocks.{n_layers-1}.hook_resid_post`. With `graph = fa.EAPGraph.from_model(model)`, receiver
# `graph.receiver_base(L) + j * n_heads + h` is head h's input j (q, k, v = 0, 1, 2), `+ 3 * n_heads` the MLP, the last
# the logits; receiver r reads the first `graph.n_upstream[r]` senders. The edges to cut: `graph.edge_mask() & ~circuit`.
# </details>
#
# <details><summary>Hint 3: code</summary>
#
# Stack the corrupted run's outputs, `bad = torch.stack(store)`. In the clean run, under `sender_outputs(live)` and the
# receiver hooks, the inputs of heads `r0 .. r0 + n_heads - 1` become `act - torch.einsum("sr,sbpd->bprd", cut[:n,
# r0:r1], torch.stack(live[:n]) - bad[:n])` with `n = graph.n_upstream[r0]`; an MLP or the logits: `act[:, :, None]`.
# </details>
# %%
from tutorial_lib.core.view import engine_view


def sender_outputs(store):
    """Hooks appending each sender's output [batch, pos, d_model] to `store`, in the graph's order (embed, a0.h0, ...,
    m0, a1.h0, ...), as a run computes them; per-head results need `engine_view(model, attn_result=True)`."""
    return [("blocks.0.hook_resid_pre", lambda act, hook: store.append(act)),
            (lambda name: name.endswith("attn.hook_result"), lambda act, hook: store.extend(act.unbind(2))),
            (lambda name: name.endswith("hook_mlp_out"), lambda act, hook: store.append(act))]


def faithfulness_of(model, task, circuit):
    # BEGIN SOLUTION: the corrupted run's sender outputs; the clean run with each receiver's cut edges replaced; then f
    graph = fa.EAPGraph.from_model(model)
    cut = (graph.edge_mask() & ~circuit.cpu()).float().to(model.W_E.device)  # 1: the edge is outside the circuit
    H, R = graph.n_heads, len(graph.receivers)
    with torch.no_grad(), engine_view(model, split_qkv=True, attn_result=True, mlp_in=True):
        store, live = [], []
        with model.hooks(fwd_hooks=sender_outputs(store)):
            m_empty = task.metric(model(task.corrupt)).mean().item()
        bad = torch.stack(store)
        m_full = task.metric(model(task.clean)).mean().item()

        def cut_into(act, r0, r1):  # receivers r0..r1-1 (same senders): each cut edge carries its corrupted value
            n = graph.n_upstream[r0]
            return act - torch.einsum("sr,sbpd->bprd", cut[:n, r0:r1], torch.stack(live[:n]) - bad[:n])

        def heads(act, hook):  # [batch, pos, head, d_model]
            r0 = graph.receiver_base(hook.layer()) + "qkv".index(hook.name[-7]) * H
            return cut_into(act, r0, r0 + H)

        def one(r_of):  # a receiver with one input [batch, pos, d_model]: an MLP or the logits
            return lambda act, hook: cut_into(act[:, :, None], r_of(hook), r_of(hook) + 1)[:, :, 0]

        receivers = [(lambda name: name.endswith(("hook_q_input", "hook_k_input", "hook_v_input")), heads),
                     (lambda name: name.endswith("hook_mlp_in"), one(lambda hook: graph.receiver_base(hook.layer()) + 3 * H)),
                     (f"blocks.{graph.n_layers - 1}.hook_resid_post", one(lambda hook: R - 1))]
        with model.hooks(fwd_hooks=sender_outputs(live) + receivers):
            m_c = task.metric(model(task.clean)).mean().item()
    return (m_c - m_empty) / (m_full - m_empty)
    # END SOLUTION


checks.check_faithfulness(faithfulness_of, model, task, [comparison.circuit("path patching", 0),
                                                         comparison.circuit("EAP", 0.02), comparison.circuit("EAP", 0.2)])
# %% [markdown]
# ## 3. Faithfulness curves, CPR and CMD (~35 min)
#
# A method may be excellent at 5% of the edges and useless at 1%, so MIB draws the **faithfulness curve**: f of
# each method's top-k edges, k from 0.1% to 100%, against random circuits (grey band: seeds, min to max); the star
# is the path-patching circuit.
#
# *Top-k by what?* A score estimates m(edge cut) − m(clean): an edge the task needs scores negative, one working
# *against* the task positive. The **signed** ranking (most negative first) builds the circuit that best
# *performs* the task: MIB reads **CPR** from its curve. The **absolute** ranking (largest |score| first) builds
# the circuit closest to the *model*, keeping what works against the task too: MIB reads **CMD** from it. The first
# figure ranks by |score|, the second signed.
#
# *Predict first*, in the next cell, before you run the curves. (Scored by the
# [fair-prediction rule](00_start_here.ipynb#glossary): an answer counts when the run's examples, resampled, or its
# random seeds allow it.)
# %%
PREDICT_IG_ABOVE_EAP = True  # LEARNER: None  # up to 10% of the edges, will EAP-IG's curve lie above EAP's at more sizes than below? True or False
PREDICT_RANDOM_AT_80 = 50  # LEARNER: None  # at what % of the edges do random circuits first reach f ≥ 0.8 (mean over seeds)? a number 0-100
# %%
from tutorial_lib.viz.comparing import plot_faithfulness

plot_faithfulness(comparison, "edges")  # ranked by |score|: MIB's ranking for CMD
# %%
plot_faithfulness(comparison, "edges", ranking="signed")  # ranked by signed score: MIB's ranking for CPR
# %% [markdown]
# The same for **node circuits**, ranked by |score| (x: the fraction of the nodes kept). Exact node patching
# ranks nodes by their effect alone; nodes interact, so its curve can be beaten. A node curve stays at 0 until
# its ranking picks `embed`:
# %%
plot_faithfulness(comparison, "nodes")
# %% [markdown]
# **Reading the curves on this run:**
# %%
from tutorial_lib.studies.comparing import curve_facts
from tutorial_lib.studies.comparing_text import curve_reading, curve_table, folded

reading.see(curve_reading(comparison))
display(folded(curve_table(comparison), "Every curve in numbers (click to open)"))
facts = curve_facts(comparison)
from tutorial_lib.studies.comparing_predictions import ig_above_answers, random_at_range

reading.predicted(PREDICT_IG_ABOVE_EAP, ig_above_answers(model, task, comparison), "EAP-IG above EAP at more small sizes than below",
                  options=(True, False),
                  why="The integrated gradients help most where the clean run is saturated (section 1.2).")
reading.predicted(PREDICT_RANDOM_AT_80, round(100 * facts["random_mean_first_at"], 1),
                  "% of the edges where random circuits first reach f ≥ 0.8",
                  interval=tuple(100 * x for x in random_at_range(comparison)),
                  why="That is the size a method's circuit must beat to be better than chance.")
# %% [markdown]
# **Claims on this model.** EAP's and EAP-IG's CPR (signed ranking) above every random seed's, and the
# path-patching circuit's f above every matched random circuit's (the embedding and as many random heads and
# MLPs). A claim fails if a random circuit does as well; where random circuits keep f at 0 until nearly the whole
# model, there is nothing to beat and the claim is reported *not testable on this model*.
# %%
from tutorial_lib.course.claims import check
from tutorial_lib.studies.comparing import claim_facts

for spec in claim_facts(comparison, model):
    check(*spec.as_args())
# %%
from tutorial_lib.studies.comparing_text import random_band_answer

reading.answer("Why do random circuits need so many of the edges, when the methods' circuits need a few percent?",
               random_band_answer(comparison))
# %% [markdown]
# **Exercise 4 — a random circuit of a given size.** Write `random_circuit(graph, fraction, seed)`: an edge mask
# `[n_senders, n_receivers]` (bool) holding `fa.size_to_count(fraction, fa.n_edges(graph))` edges drawn uniformly
# among the graph's edges (`graph.edge_mask()`: True where a sender sits before its receiver), the same circuit for
# the same seed: the library's definition behind the grey band (`fa.random_scores` then `fa.top_edges`).
#
# <details><summary>Hint (click to open)</summary>
#
# The flat indices of the valid edges are `graph.edge_mask().flatten().nonzero().squeeze(1)`; shuffle them with
# `torch.randperm(len(idx), generator=torch.Generator().manual_seed(seed))`, keep the first k, set those entries
# of a flat `torch.zeros(..., dtype=torch.bool)` to True and `.view` it back to the mask's shape.
#
# </details>
# %%
def random_circuit(graph, fraction, seed):
    # BEGIN SOLUTION: k = size_to_count of the graph's edges; shuffle the valid edges' flat indices with a seeded generator
    valid = graph.edge_mask()
    k = fa.size_to_count(fraction, fa.n_edges(graph))
    idx = valid.flatten().nonzero().squeeze(1)
    chosen = idx[torch.randperm(len(idx), generator=torch.Generator().manual_seed(seed))[:k]]
    mask = torch.zeros(valid.numel(), dtype=torch.bool)
    mask[chosen] = True
    return mask.view(valid.shape)
    # END SOLUTION


checks.check_random_circuit(random_circuit, graph)
# %% [markdown]
# Your random circuits with as many edges as the path-patching circuit, scored with your `faithfulness_of`:
# %%
pp_fraction = comparison.pp_point["fraction_edges"]
mine = [faithfulness_of(model, task, random_circuit(graph, pp_fraction, s)) for s in range(3)]
reading.see(f"Three random circuits of {comparison.pp_point['n_edges']} edges ({pp_fraction:.1%}): f = "
            f"{', '.join(f'{v:.2f}' for v in mine)}; the path-patching circuit, as many edges: f = "
            f"{comparison.pp_point['f']:.2f}. Size alone does not make a circuit faithful.")
# %% [markdown]
# **CPR and CMD** ([glossary](00_start_here.ipynb#glossary)): areas over the x-axis "fraction of edges kept",
# 0 to 1: CPR = ∫ f (higher is better) and CMD = ∫ |1 − f| (lower is better: behaving like the model).
#
# **Exercise 3 — CPR and CMD from a curve.** Write `cpr_and_cmd(fractions, f)` returning the pair, by the trapezoid
# rule (no library call). It computes both areas of *one* curve; MIB takes CPR from the signed curve, CMD from the
# |score| one.
#
# <details><summary>Hint (click to open)</summary>
#
# A segment from `fractions[i]` to `fractions[i + 1]` adds its width times the mean of its two ends: of f for CPR,
# of |1 − f| for CMD.
#
# </details>
# %%
def cpr_and_cmd(fractions, f):
    # BEGIN SOLUTION: sum over segments of width x[i+1] - x[i] times the mean of the two ends
    cpr = sum((fractions[i + 1] - fractions[i]) * (f[i] + f[i + 1]) / 2 for i in range(len(f) - 1))
    cmd = sum((fractions[i + 1] - fractions[i]) * (abs(1 - f[i]) + abs(1 - f[i + 1])) / 2 for i in range(len(f) - 1))
    return cpr, cmd
    # END SOLUTION


checks.check_cpr_cmd(cpr_and_cmd)
c = comparison.edge_curves["EAP"]
print("your CPR, CMD of EAP's edge curve (|score| ranking):", [round(v, 4) for v in cpr_and_cmd(c.fractions, c.f)],
      "  library:", round(c.cpr(), 4), round(c.cmd(), 4))
# %% [markdown]
# MIB's pair for each method (CPR signed, CMD |score|, linear x-axis) beside the random circuits':
# %%
comparison.mib_table()
# %% [markdown]
# Every curve's areas, both rankings, on the linear x-axis (MIB's) and the log x-axis (each decade of sizes weighs
# the same). A method's two rows differ only where some edges work against the task:
# %%
table = comparison.table()
table
# %% [markdown]
# **Which x-axis?** On MIB's linear axis the sizes below 10%, where methods differ most, fill a tenth of the
# width; on the log axis small circuits count as much as large ones. Edges are ranked by signed CPR, nodes by
# |score| CPR (a tie: within 0.005). A claim that one method beats another should name its axis:
# %%
display(Markdown(comparison.axis_note()))
# %% [markdown]
# ### 3.1 Where the methods differ
#
# Where every method is back at f ≈ 1, the curves coincide; the methods differ only below. The **window**: every
# size below the smallest from which every CPR curve stays within 0.05 of f = 1; a curve's area over it, divided
# by its width, is its CPR there. An empty window means this model cannot rank the methods.
# %%
from tutorial_lib.studies.comparing_text import window_reading

reading.see(window_reading(comparison))
# %% [markdown]
# ## 4. Do the methods agree? (~25 min)
#
# Faithfulness says how *good* each circuit is; overlap, whether the methods found the *same* one. At the
# path-patching circuit's size k, each node ranking gives its top-k heads and MLPs (the embedding left out); the
# **Jaccard overlap** |A ∩ B| / |A ∪ B| ([glossary](00_start_here.ipynb#glossary)) is 1 for identical sets. Two
# random sets of the same sizes overlap too, by chance.
#
# **Exercise 5 — overlap against chance.** Write `overlap_against_chance(a, b, n, draws, seed)` for two lists of
# components `a` and `b` out of `n`: return `(jaccard, chance, p)`, where `chance` is the mean Jaccard of `draws`
# pairs of random sets of sizes `len(a)` and `len(b)` drawn from `n` items (seeded: `torch.Generator().manual_seed
# (seed)`, `torch.randperm`), and `p` the share of those random pairs whose Jaccard is at least the observed one,
# counted as a permutation test does: (1 + #{random ≥ observed}) / (1 + draws). The check compares with the exact
# values (the intersection of two random sets follows a hypergeometric law: `studies.comparing.expected_jaccard`
# and `overlap_p`).
#
# <details><summary>Hint (click to open)</summary>
#
# Random sets of indices will do: `set(torch.randperm(n, generator=g)[:len(a)].tolist())`, and the same for
# `len(b)` with the same generator. Keep the `draws` random Jaccards in a list; `chance` is their mean.
#
# </details>
# %%
def overlap_against_chance(a, b, n, draws, seed):
    # BEGIN SOLUTION: Jaccard of a and b; draws pairs of random sets of sizes len(a), len(b); mean; (1 + #>=) / (1 + draws)
    a, b = set(a), set(b)
    jac = len(a & b) / len(a | b)
    g = torch.Generator().manual_seed(seed)
    rand = []
    for _ in range(draws):
        ra, rb = set(torch.randperm(n, generator=g)[:len(a)].tolist()), set(torch.randperm(n, generator=g)[:len(b)].tolist())
        rand.append(len(ra & rb) / len(ra | rb))
    return jac, sum(rand) / draws, (1 + sum(r >= jac - 1e-12 for r in rand)) / (1 + draws)
    # END SOLUTION


K = len(comparison.pp_nodes)
sets = comparison.node_sets(K)
checks.check_overlap_against_chance(overlap_against_chance, cases=[(sets["EAP"], sets["exact node patching"],
                                                                    len(comparison.components))])
# %% [markdown]
# *Predict first.* At k, which method's top-k heads and MLPs overlap exact node patching's the most, by Jaccard?
# %%
PREDICT_CLOSEST_TO_EXACT = "EAP-IG"  # LEARNER: None  # "EAP", "EAP-IG" or "path patching": most Jaccard with exact patching's top-k
# %%
overlaps = comparison.overlap_with_exact(K)
print(f"node sets of size k = {K} out of {len(comparison.components)} heads and MLPs; yours for EAP vs exact: "
      f"{[round(v, 3) for v in overlap_against_chance(sets['EAP'], sets['exact node patching'], len(comparison.components), 2000, 0)]}")
overlaps
# %%
from tutorial_lib.studies.comparing_predictions import closest_answers
from tutorial_lib.studies.comparing_text import closest_why

reading.predicted(PREDICT_CLOSEST_TO_EXACT, closest_answers(comparison, K),
                  f"the method whose top-{K} set overlaps exact node patching's most (Jaccard)",
                  options=["EAP", "EAP-IG", "path patching"], why=closest_why(comparison, K))
# %%
from tutorial_lib.studies.comparing import expected_jaccard
from tutorial_lib.viz.comparing import plot_overlap_by_size

n_comp = len(comparison.components)
plot_overlap_by_size(comparison.overlap_by_size(), K, chance=lambda k: expected_jaccard(n_comp, k, k))
# %% [markdown]
# The circuits as graphs (nodes by layer, MLPs as squares on the right, edges coloured by method, the
# path-patching circuit outlined), EAP and EAP-IG at the path-patching circuit's edge count, ranked by |score|:
# %%
from tutorial_lib.viz.comparing import plot_circuit_graph

size = comparison.pp_point["fraction_edges"]
plot_circuit_graph(graph, {"EAP": comparison.circuit("EAP", size), "EAP-IG": comparison.circuit("EAP-IG", size),
                           "path patching": comparison.circuit("path patching", size)}, highlight=comparison.pp_nodes,
                   max_edges=2000)
# %% [markdown]
# Two methods that agree may share a bias (EAP and EAP-IG use the same gradients and metric); two that disagree
# may both be faithful (redundant paths). Faithfulness, not overlap, tests a circuit (the EAP-IG **paper**'s title:
# "going beyond circuit overlap"); overlap says whether the explanations are interchangeable.
# %%
from tutorial_lib.studies.comparing_text import agreement_answer

reading.answer("If the methods agree, does that make their circuit the right one?", agreement_answer(comparison))
# %% [markdown]
# ## 5. The panel (~10 min)
#
# Pick a size and a method: the marked points show every method's f at that size, the graph that method's
# circuit (edges by |score|; over 400 edges, drawn at 5% of the edges).
# %%
from tutorial_lib.viz.comparing import ComparisonPanel

panel = ComparisonPanel(comparison)
panel
# %% [markdown]
# ## 6. Exchange: circuits as JSON, names in EAP-IG and MIB (~5 min)
#
# A circuit travels as JSON: edges (`"sender->receiver"`), nodes, scores, method, settings and the graph's shape
# (checked when read back).
# %%
import json
import tempfile
from pathlib import Path

out = Path(tempfile.gettempdir()) / f"circuit_{TASK}_eap_ig.json"
doc = fa.circuit_to_json(graph, comparison.circuit("EAP-IG", 0.05), "EAP-IG",
                         {"ig_steps": IG_STEPS, "metric": task.metric_name, "task": task.name, "size": 0.05,
                          "n_examples": len(task)}, comparison.edge_scores["EAP-IG"], path=out)
back, _ = fa.circuit_from_json(graph, out)
print(f"wrote {out} ({len(doc['edges'])} edges); read back identical: {torch.equal(back, comparison.circuit('EAP-IG', 0.05))}")
print(json.dumps({k: doc[k] for k in ("method", "settings", "graph")}, indent=1))
print("first edges:", doc["edges"][:4])
# %% [markdown]
# **Names elsewhere.** The EAP-IG library (`hannamw/EAP-IG`, under MIB's circuit track) uses the same graph with
# two spellings changed: the embedding is `input`, not `embed`, and a head's input `a2.h3<q>`, not `a2.h3.q`.
# `fa.to_eap_ig_name` and `fa.from_eap_ig_name` convert:
# %%
print([fa.to_eap_ig_name(e) for e in doc["edges"][:4]])
# %% [markdown]
# <details><summary>Comparing with published circuits and scores</summary>
#
# EAP-IG's `input` node hooks the token embedding (`hook_embed`), `embed` here the whole block-0 input (with GPT-2's
# position embedding); MIB prunes edges that do not connect the input to the logits (f is the same); MIB's scores
# carry the opposite sign (a loss), so its descending signed ranking is the order of the signed ranking here. A
# published number that reads CPR and CMD from one ranking is not comparable (MIB's circuit-track issue #19: a CMD
# of 0.72 against the paper's 0.38).
#
# </details>
# %% [markdown]
# ## 7. What this tells us, and what it doesn't (~5 min)
#
# * The curves rank *methods* on one task, metric and model (**paper**: on MIB, EAP-IG ahead of EAP on most).
# * A faithful circuit is *sufficient* on these prompts; not shown to generalise (notebook 01) or to be necessary
#   (notebooks 01–02).
# * f depends on the corruption: other corrupted prompts, or mean ablation, score a circuit differently.
# * Agreement shows the methods read one signal, not that the signal is the mechanism.
# %% [markdown]
# ## 8. One circuit, four studies (~10 min)
#
# This task's components as each study sees them: **01**, in the path-patching circuit (section 1.1); **02**, the
# share of examples whose own top-k holds it; **03**, induction selectivity (50× passes) and, on greater-than,
# attention from END (the second `" 17"`) to YY, the token after the earlier `" 17"`; **04**, the rank by exact
# node effect and by EAP-IG.
# %%
from tutorial_lib.studies.comparing_links import study_links

links = study_links(model, task, comparison, eap, probe_n=sizes.pick("probe sequences", full=128, cpu=64, quick=32, model=model))
reading.see(links.reading())
links.table
# %% [markdown]
# ### The claims of this notebook
# %%
from tutorial_lib.course import claims

claims.summary("04", record_as="04", model=model)
