# %% [markdown]
# # 04 · One task, several methods, one yardstick: which circuit is better?
#
# Notebooks 01–03 each found circuits their own way: path patching (Hanna, Liu & Variengien 2023), edge
# attribution patching per example (Li & Subramani 2026), and a spectral recipe (Xu 2026). A reader's next
# question is whether the methods *agree*, and which circuit is the *better* one. This notebook answers both
# for one task and one model, the way the circuit-localisation track of the MIB benchmark (Mueller et al.
# 2025) scores circuits:
#
# * four ways to find a circuit: the **path-patching search** of notebook 01, **EAP** edge scores averaged over
#   the dataset, **EAP with integrated gradients** (EAP-IG; Hanna, Pezzelle & Belinkov 2024), and **exact
#   activation patching** of every node alone (each node's own effect: what EAP's node scores estimate, but not a
#   ground truth for circuits, since nodes interact — a head whose work a backup head takes over looks unimportant
#   alone);
# * one yardstick: the **faithfulness** f of a circuit, the share of the model's behaviour it keeps when every edge
#   *outside* it is cut: f = (m(circuit) − m(nothing)) / (m(model) − m(nothing)) for the task's metric m, so 1 is the
#   whole model and 0 the corrupted run. It is measured at circuit sizes from 0.1% to 100% of the edges and
#   summarised by two areas over the size axis: **CPR** (integrated circuit performance ratio, the area under f;
#   higher is better) and **CMD** (integrated circuit-model distance, the area under |1 − f|; lower is better),
#   against random circuits of the same sizes — each read, as MIB does, from its own ranking of the edges (CPR:
#   signed; CMD: by |score|);
# * agreement: overlap of the methods' circuits at matched sizes, against chance, and a drawing of the circuits;
# * the same heads as notebooks 01, 02 and 03 saw them, in one table.
#
# **Learning objectives**: by the end of this notebook you can
# 1. say what EAP-IG changes in EAP, compute one of its steps, and check that m = 1 gives EAP back;
# 2. define the faithfulness of a circuit by edge patching, and write edge patching with hooks;
# 3. read a faithfulness curve against a random band, and compute CPR and CMD from it (and say how the choice
#    of x-axis changes them);
# 4. draw a random circuit of a given size, as the random band does;
# 5. compare circuits from different methods by overlap against chance, and say what agreement does and does not show;
# 6. save a circuit as JSON and map its names to the EAP-IG library's and MIB's;
# 7. connect one circuit's heads to what notebooks 01–03 saw in them.
#
# | section | exercise (difficulty, time to write) | time |
# | --- | --- | --- |
# | 0. Setup: model, task, settings | — | 5 min |
# | 1. Four methods, one task | 1: one EAP-IG step (★★★, 20 min) | 30 min |
# | 2. Faithfulness: cutting the edges outside a circuit | 2: the engine, faithfulness by edge patching (★★★, 30 min) | 35 min |
# | 3. Faithfulness curves, CPR and CMD; where the methods differ | 3: CPR and CMD from a curve (★, 10 min); 4: a random circuit of a given size (★★, 10 min) | 35 min |
# | 4. Do the methods agree? | 5: overlap against chance (★★, 15 min) | 25 min |
# | 5. The panel | — | 10 min |
# | 6. Exchange: circuits as JSON, names in EAP-IG and MIB | — | 5 min |
# | 7. What this tells us, and what it doesn't | — | 5 min |
# | 8. One circuit, four studies | — | 10 min |
#
# ★ a few lines from a formula; ★★ a short algorithm with a seed or a law to respect; ★★★ hooks and gradients.
# Each exercise names the library calls it needs; a hint is folded under it.
#
# *Which numbers are whose.* The EAP-IG paper and MIB studied GPT-2 small (MIB larger models too); their findings
# are quoted below, marked **paper**. Every other number is one this notebook measures on the model it
# loaded. Offline that is the course's zoo model: its numbers describe that model only.
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
# The task is greater-than (notebook 01): "The war lasted from the year 1732 to the year 17", where the model
# should put its probability on years above 32; the metric is the probability difference (years above YY
# minus years at or below). On the corrupted prompts ("from the year 1701 to the year 17") the model puts its
# probability on years just above 01, which are at or below YY for nearly every prompt: the corrupted metric is
# strongly negative, not 0. Switch `TASK` to `"ioi"` to run everything on indirect object identification
# (metric: the logit difference between the indirect object and the subject) instead. Greater-than needs GPT-2's
# year tokens (`" 1732"` = `" 17"` + `"32"`): on a model whose tokenizer writes years otherwise (Llama 3, Qwen3,
# Gemma 2) the cell says so and uses IOI.
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
# ## 1. Four methods, one task (~25 min)
#
# ### 1.1 Path patching
#
# On greater-than this is notebook 01's four-step search (senders at END into the logits, then into the MLPs
# found, then senders at YY into the keys and values of the heads found, then into the early MLPs), with the
# same threshold (0.005 of probability difference), on 32 of the prompts. On GPT-2 we take the circuit the paper reports instead of searching again (the search takes
# most of notebook 01's time on a CPU). On IOI it is a two-step search: senders at END into the logits, then every
# sender at every position into the inputs of what step 1 found.
# %%
from tutorial_lib.methods.path_discovery import PAPER_GREATER_THAN
from tutorial_lib.studies.comparing import path_patching_circuit

if TASK == "greater_than" and model.cfg.n_layers == 12 and model.cfg.n_heads == 12:
    pp_nodes = [c for comps in PAPER_GREATER_THAN.values() for c in comps if c != "embed"]
    pp_how = "the circuit Hanna et al. (2023) report for GPT-2 small"
else:
    pp_nodes, pp_how = path_patching_circuit(model, task.subset(range(min(len(task), 32))), progress=True)
print(f"path-patching circuit ({pp_how}): {len(pp_nodes)} components: {pp_nodes}")
# %% [markdown]
# ### 1.2 EAP and EAP-IG
#
# EAP (notebook 02) scores an edge s → r by a first-order estimate of patching it:
# $(\text{out}_s^{\text{corrupt}} - \text{out}_s^{\text{clean}}) \cdot \partial m / \partial \text{in}_r$, with the
# gradient taken at the clean input. Where the metric is far from linear between the clean and corrupted runs
# (a probability that saturates, a softmax that flips), the gradient at one end says little about the whole way.
# **EAP-IG** averages the gradient over m points on the straight line from the corrupted input embeddings to the
# clean ones, $x_k = x^{\text{corrupt}} + \tfrac{k}{m}(x^{\text{clean}} - x^{\text{corrupt}})$ for k = 1 … m,
# like integrated gradients (Sundararajan et al. 2017) do for input attributions. With m = 1 the only point is the
# clean input: EAP. The library runs the m points as one batch of m × examples rows (one forward, one backward).
#
# *On other families.* Every method here runs on Llama 3.2, Qwen3, Gemma 2, OLMo-2, Pythia and OLMoE too (the README's
# table). One approximation differs there: on Gemma 2 and OLMo-2 a norm sits on each layer's *summed* attention output,
# so a head's change is not additive; EAP then gives a head's edges its change when it alone moves, $N(A + \Delta_h) -
# N(A)$ (as the EAP-IG library does), while path patching and the faithfulness curves recompute the norm exactly.
#
# **Exercise 1 — one EAP-IG step.** Write `edge_score_at_alpha(model, task, sender, example, alpha)`: the score of
# the edge `sender → logits` for one example, with the gradient of the task's metric taken at the input
# $x^{\text{corrupt}} + \alpha(x^{\text{clean}} - x^{\text{corrupt}})$. Replace the block-0 input
# (`blocks.0.hook_resid_pre`) by the interpolated one with a hook, keep the final residual stream
# (`blocks.{L-1}.hook_resid_post`) to take the gradient there, and multiply by the sender's output difference
# (corrupted minus clean, each from its own run) summed over positions and `d_model`. The check averages your
# function over α = 1/3, 2/3, 1 and compares it with the library's EAP-IG with m = 3. You need `sender_output`
# (below), `model.hooks(fwd_hooks=[(name, fn), ...])`, `task.subset([example]).metric(logits)` and
# `torch.autograd.grad`.
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
# Now the library's EAP and EAP-IG on every edge and every example, and exact activation patching of every node
# (each head and MLP replaced by its corrupted output, alone). First, the claim that m = 1 *is* EAP: your
# `edge_score_at_alpha` at α = 1 (the only point when m = 1) against the library's EAP score of the same edge,
# and how far EAP-IG moves the scores:
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
    f"At α = 1 your scores equal EAP's (m = 1 is EAP); EAP-IG's scores are {ratio:.1f} times EAP's in size, with the "
    f"{task.metric_name} at {m_clean:.2f} on clean prompts. "
    + ("The clean run is saturated: the gradient at the clean input is close to zero, so EAP *under*-estimates what "
       "patching an edge does, and the points between corrupted and clean inputs carry the signal." if ratio > 2 else
       "The two are close: the metric is not saturated at the clean end, so its gradient there says about as much "
       "as the average along the line."))
# %% [markdown]
# IG has a property EAP lacks, *completeness*: summed over all receivers, the `embed` sender's edges are the
# gradient of the metric with respect to the input, times the input difference; integrated along the line (m → ∞)
# that is exactly metric(corrupted) − metric(clean). The table shows how close each m gets, on this task:
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
# `compare_methods` runs the rest, reusing section 1.2's scores: node rankings for EAP and EAP-IG (the signed sum of
# a node's outgoing edge scores, the linear estimate of patching it), exact node patching, random circuits, and the
# faithfulness of every circuit at every size (section 3). It prints how long each part took.
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
# A circuit C is a set of edges. To run "only the circuit", every edge *outside* C carries the corrupted run's
# value of its sender into its receiver, and the circuit's edges carry the value the sender has in this patched
# run itself:
#
# $$\text{in}_r = \sum_{s \to r \,\in\, C} \text{out}_s^{\text{patched}} + \sum_{s \to r \,\notin\, C} \text{out}_s^{\text{corrupt}}$$
#
# Then with m(·) the task's metric averaged over the examples,
#
# $$f(C) = \frac{m(C) - m(\varnothing)}{m(M) - m(\varnothing)}$$
#
# where M is the whole model (every edge in: the clean run) and ∅ the empty circuit (every edge cut: each
# receiver sees only corrupted values, which *is* the corrupted run). So f(M) = 1 and f(∅) = 0 exactly; f can
# leave [0, 1] — a circuit that leaves out something working *against* the task scores above 1.
#
# A circuit of **nodes** (`embed`, heads, MLPs) holds every edge between two of its nodes, and into `logits`; without
# `embed` it reads nothing of the clean prompt (f = 0). The path-patching circuit is the node circuit of `embed` and
# the components the search found.
#
# Unlike path patching (notebook 01), which freezes all but one path, here the whole model runs and only the cut
# edges carry corrupted values; cutting a single edge s → r is exactly path patching from s into r.
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
# sender's corrupted output. `sender_outputs` (below) collects the senders' outputs in the graph's order. The check
# is against the library's engine, to 1e-4.
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
# ## 3. Faithfulness curves, CPR and CMD (~25 min)
#
# One circuit size says little: a method may be excellent at 5% and useless at 1%. So MIB draws the whole
# **faithfulness curve**: f of each method's top-k edges for k from 0.1% to 100% of the edges. Random circuits of
# the same sizes (grey band: several seeds, min to max) show what a method must beat; the star is the
# path-patching circuit, a single circuit at its own size.
#
# *Top-k by what?* A score here estimates m(edge cut) − m(clean): an edge the task needs scores negative, one that
# works *against* the task positive. MIB's circuit track ranks the edges two ways. The **signed** ranking (most
# negative first) builds the circuit that best *performs* the task, and MIB reads **CPR** from its curve; the
# **absolute** ranking (largest |score| first) builds the circuit closest to the *model*, which must keep what
# works against the task too, and MIB reads **CMD** from its curve. Reading both from one ranking gives numbers
# that cannot be set beside MIB's. The first figure ranks by |score| (CMD's curve), the second signed (CPR's).
#
# *Predict first.* Write your guesses into the next cell before you run the curves; the cell after them says how
# they compare with this run.
# %%
PREDICT_IG_ABOVE_EAP = True  # LEARNER: None  # up to 10% of the edges, will EAP-IG's curve lie above EAP's at more sizes than below? True or False
PREDICT_RANDOM_AT_80 = 50  # LEARNER: None  # at what % of the edges do random circuits first reach f ≥ 0.8 (mean over seeds)? a number 0-100
# %%
from tutorial_lib.viz.comparing import plot_faithfulness

plot_faithfulness(comparison, "edges")  # ranked by |score|: MIB's ranking for CMD
# %%
plot_faithfulness(comparison, "edges", ranking="signed")  # ranked by signed score: MIB's ranking for CPR
# %% [markdown]
# The same for **node circuits**, ranked by |score| (x: the fraction of the nodes — embedding, heads and MLPs —
# kept; a node circuit holds every edge among its nodes, into the logits too). Exact node patching ranks the nodes
# by their effect patched one at a time; a circuit of several nodes can do more or less than the sum of those
# effects (nodes interact), so its curve can be beaten. A node curve stays at 0 until its ranking picks `embed`:
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
reading.predicted(PREDICT_IG_ABOVE_EAP, facts["ig_above_at_most"], "EAP-IG above EAP at more small sizes than below",
                  why="The integrated gradients help most where the clean run is saturated (section 1.2).")
reading.predicted(PREDICT_RANDOM_AT_80, round(100 * facts["random_mean_first_at"], 1),
                  "% of the edges where random circuits first reach f ≥ 0.8", tolerance=15,
                  why="That is the size a method's circuit must beat to be better than chance.")
# %% [markdown]
# **Claims on this model.** EAP's and EAP-IG's CPR (signed ranking) above every random seed's, and the
# path-patching circuit above every matched random circuit (the embedding and as many random heads and MLPs). Each
# claim is testable only where its random baseline has room: random circuits that keep f at 0 until nearly the whole
# model leave nothing to beat, and a claim against them is reported *not testable on this model*.
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
# **Exercise 4 — a random circuit of a given size.** The grey band is made of random circuits. Write
# `random_circuit(graph, fraction, seed)`: an edge mask `[n_senders, n_receivers]` (bool) holding
# `fa.size_to_count(fraction, fa.n_edges(graph))` edges drawn uniformly among the graph's edges
# (`graph.edge_mask()`: True where a sender sits before its receiver), the same circuit for the same seed. That is
# the library's one definition: `fa.random_scores` puts the edges in a uniformly random order and `fa.top_edges`
# keeps the first `size_to_count` of them, the random curves above.
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
reading.see(f"Three random circuits of {comparison.pp_point['n_edges']} edges ({pp_fraction:.1%}) have f = "
            f"{', '.join(f'{v:.2f}' for v in mine)}; the path-patching circuit, with as many edges, has f = "
            f"{comparison.pp_point['f']:.2f}. Size alone does not make a circuit faithful.")
# %% [markdown]
# **CPR and CMD.** MIB summarises a curve by two areas over the x-axis "fraction of edges kept", from 0 to 1, by
# the trapezoid rule: the **integrated circuit performance ratio** CPR = ∫ f (higher is better: small circuits that
# already do the task) and the **integrated circuit-model distance** CMD = ∫ |1 − f| (lower is better: circuits
# that behave like the model, neither worse nor better).
#
# **Exercise 3 — CPR and CMD from a curve.** Write `cpr_and_cmd(fractions, f)` returning the pair, by the trapezoid
# rule (no library call). (It computes both areas of *one* curve; MIB takes CPR from the signed curve, CMD from the
# |score| one.)
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
# MIB's pair for each method — CPR from the signed ranking, CMD from the |score| ranking, linear x-axis — beside
# the random circuits':
# %%
comparison.mib_table()
# %% [markdown]
# Every curve's areas, in both rankings, on the linear x-axis (MIB's) and the log x-axis (each decade of sizes,
# 0.1%–1%, 1%–10%, 10%–100%, weighs the same). A method's two rows differ only where some edges work against the
# task (positive scores): the signed ranking leaves them for last, the |score| ranking takes the large ones early:
# %%
table = comparison.table()
table
# %% [markdown]
# **Which x-axis?** On MIB's linear axis the sizes below 10% of the edges, where methods differ most, fill only a
# tenth of the width; a method that reaches f ≈ 1 by 10% and one that gets there at 30% differ by at most about a
# quarter of CPR. On the log axis the small circuits count as much as the large ones: every area falls, and a
# method's *ratio* to the random band grows, while the difference between them can shrink. Edge circuits and node
# circuits have different x-axes (fractions of edges, fractions of nodes), so each kind is ranked on its own (edges
# by their signed-ranking CPR, MIB's; nodes by the |score| ranking's); a tie is a CPR difference below 0.005. A claim
# that one method beats another should say which axis it integrates over:
# %%
display(Markdown(comparison.axis_note()))
# %% [markdown]
# ### 3.1 Where the methods differ
#
# On MIB's sizes a curve that reaches f ≈ 1 early has a CPR near 1 whichever method drew it: above the size where
# every method is back at the model's behaviour, all curves lie on top of each other, and that stretch fills most
# of the axis. The methods can only differ below it. The rule used here, read from the run: the **window** is every
# size below the smallest one from which every method's CPR curve stays within 0.05 of f = 1; each curve's area
# over the window, divided by its width, is its CPR there (1 = the model's behaviour at every size of the window).
# MIB's full-range numbers are printed beside. If every method is within 0.05 of 1 from the smallest size on, the
# window is empty: the reading says so, and this model cannot rank the methods.
# %%
from tutorial_lib.studies.comparing_text import window_reading

reading.see(window_reading(comparison))
# %% [markdown]
# ## 4. Do the methods agree? (~25 min)
#
# Faithfulness says how *good* each circuit is; overlap says whether the methods found the *same* circuit. At the
# path-patching circuit's size k, each node ranking gives its top-k heads and MLPs (the embedding, in every
# circuit that does the task, is left out of the overlap); the **Jaccard overlap** |A ∩ B| / |A ∪ B| of two such
# sets is 1 for identical sets. Against what? Two random sets of the same sizes overlap too, by chance.
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
# *Predict first.* At k (the path-patching circuit's size), which method's top-k heads and MLPs overlap exact node
# patching's the most, by Jaccard? A principled guess: EAP-IG, whose integrated gradients fix EAP's flat gradient
# where the metric saturates (section 1.2), and which the **paper** finds closer to activation patching.
# %%
PREDICT_CLOSEST_TO_EXACT = "EAP-IG"  # LEARNER: None  # "EAP", "EAP-IG" or "path patching": most Jaccard with exact patching's top-k
# %%
overlaps = comparison.overlap_with_exact(K)
print(f"node sets of size k = {K} out of {len(comparison.components)} heads and MLPs; yours for EAP vs exact: "
      f"{[round(v, 3) for v in overlap_against_chance(sets['EAP'], sets['exact node patching'], len(comparison.components), 2000, 0)]}")
overlaps
# %%
from tutorial_lib.studies.comparing import closest_to_exact
from tutorial_lib.studies.comparing_text import closest_why

reading.predicted(PREDICT_CLOSEST_TO_EXACT, closest_to_exact(comparison, K),
                  f"the method whose top-{K} set overlaps exact node patching's most (Jaccard)",
                  options=["EAP", "EAP-IG", "path patching"], why=closest_why(comparison, K))
# %%
from tutorial_lib.studies.comparing import expected_jaccard
from tutorial_lib.viz.comparing import plot_overlap_by_size

n_comp = len(comparison.components)
plot_overlap_by_size(comparison.overlap_by_size(), K, chance=lambda k: expected_jaccard(n_comp, k, k))
# %% [markdown]
# The circuits drawn as graphs (nodes by layer, heads left to right, each layer's MLP as a square on the right;
# edges coloured by method; the path-patching circuit's components outlined). EAP and EAP-IG are drawn at the
# size where their edge count is closest to the path-patching circuit's, ranked by |score|:
# %%
from tutorial_lib.viz.comparing import plot_circuit_graph

size = comparison.pp_point["fraction_edges"]
plot_circuit_graph(graph, {"EAP": comparison.circuit("EAP", size), "EAP-IG": comparison.circuit("EAP-IG", size),
                           "path patching": comparison.circuit("path patching", size)}, highlight=comparison.pp_nodes,
                   max_edges=2000)
# %% [markdown]
# What agreement does and does not show: two methods that agree may share a bias (EAP and EAP-IG use the same
# gradients; both read the same metric), and two that disagree may both be faithful (a model can do a task along
# redundant paths). Faithfulness, not overlap, is the test of a circuit (the **paper** of EAP-IG makes this its
# title: "going beyond circuit overlap"); overlap tells you whether the explanations are interchangeable.
# %%
from tutorial_lib.studies.comparing_text import agreement_answer

reading.answer("If the methods agree, does that make their circuit the right one?", agreement_answer(comparison))
# %% [markdown]
# ## 5. The panel (~10 min)
#
# Move the slider to a circuit size and pick a method: the marked points show f of every method at that size,
# and the graph below shows that method's circuit, with its nodes outlined (edges ranked by |score|, as in the
# first figure of section 3). (A circuit of more than 400 edges is drawn at 5% of the edges, so that the drawing
# stays readable.)
# %%
from tutorial_lib.viz.comparing import ComparisonPanel

panel = ComparisonPanel(comparison)
panel
# %% [markdown]
# ## 6. Exchange: circuits as JSON, names in EAP-IG and MIB (~5 min)
#
# A circuit travels as JSON: edges (`"sender->receiver"`), nodes, scores, method, settings and the graph's shape
# (a circuit of another shape is refused when read back).
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
# **Names elsewhere.** The EAP-IG library (`hannamw/EAP-IG`, which MIB's circuit track builds on) uses the same
# graph: senders `input` (the embeddings), `a{l}.h{h}` and `m{l}`; receivers the q, k and v inputs of every head,
# every MLP and `logits`. Two spellings differ: the embedding is `input`, not `embed`, and a head's input is
# written `a2.h3<q>`, not `a2.h3.q`. `fa.to_eap_ig_name` and `fa.from_eap_ig_name` convert:
# %%
print([fa.to_eap_ig_name(e) for e in doc["edges"][:4]])
# %% [markdown]
# Differences remain when you compare with a circuit or a score published online: EAP-IG's `input` node hooks the
# token embedding (`hook_embed`), `embed` here the whole block-0 input (with GPT-2's position embedding); MIB prunes
# edges that do not connect the input to the logits (f is the same); and MIB's scores carry the opposite sign (a
# loss), so its descending signed ranking is the same order as the signed ranking here. This notebook follows MIB in reading CPR
# from the signed ranking and CMD from the |score| one (`comparison.mib_table()`); a published number read both
# from one ranking is not comparable (MIB's circuit-track issue #19: a CMD of 0.72 against the paper's 0.38).
# %% [markdown]
# ## 7. What this tells us, and what it doesn't (~5 min)
#
# * The curves rank the *methods* on one task, one metric and one model. **Paper**: on MIB's circuit track, EAP-IG
#   (integrating over the inputs) was among the best methods and ahead of plain EAP on most tasks and models. On a
#   small model most of MIB's size axis is saturated and the node rankings can tie: section 3.1 says, from the run,
#   where the methods differ at all.
# * A faithful circuit is *sufficient* for the metric on these prompts; it is not shown to be the mechanism the
#   model uses elsewhere (notebook 01's generalisation section) or to be necessary (notebook 01's and 02's
#   necessity tests).
# * f depends on the corruption: with other corrupted prompts (or mean instead of corrupted activations) the
#   same circuit scores differently; MIB fixes the counterfactuals per task for that reason.
# * Agreement between methods is evidence that they read the same signal, not that the signal is the mechanism.
# %% [markdown]
# ## 8. One circuit, four studies (~10 min)
#
# Each notebook looked at the same model its own way. Here are the components of this task's circuit as each
# study sees them, computed on the loaded model: **01**, in the path-patching circuit; **02**, EAP per example —
# in how many examples' own top-k (k = the circuit's size) a component is (notebook 02's reuse); **03**, the
# attention filter — induction selectivity on planted pairs (attention to the token after the earlier copy of the
# current token, over random positions; 50× passes) and, on greater-than, each head's attention from END (the second
# `" 17"`) to YY, which *is* the token after the earlier `" 17"`; **04**, the rank by exact node effect and by
# EAP-IG. Rows: the path-patching circuit, exact patching's top-k and the heads 03's filter passes.
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
