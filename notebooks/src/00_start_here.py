# %% [markdown]
# # 00 · Start here: models, hooks, caches and task objects
#
# **Learning objectives** — by the end of this notebook you can
# 1. load a model with one setting (GPT-2 small when the Hugging Face hub is reachable, the offline zoo model otherwise) and say which one you have;
# 2. read a model's tokens, run it with a cache and look at an attention pattern;
# 3. change a model's computation with a hook that is always removed, even after an error;
# 4. use a *task object*: clean and corrupted prompts, answers, and a per-example metric;
# 5. run your first patching experiment and read it.
#
# | section | time |
# | --- | --- |
# | 1. Setup and model | 5 min |
# | 2. Tokens, logits and the cache (exercise 1) | 15 min |
# | 3. Hooks (exercise 2) | 10 min |
# | 4. Task objects (exercise 3) | 10 min |
# | 5. Your first patching experiment (exercise 4) | 15 min |
# | 6. The ablation panel, and claims that could fail | 15 min |
#
# | exercise | what you write | API it needs | difficulty | time |
# | --- | --- | --- | --- | --- |
# | 1. `head_output` | one head's output in the residual stream, read from the cache | `cache[...]`, `model.W_O` | ★☆☆ | 5 min |
# | 2. `zero_head_hook` | a hook that zero-ablates one head | a hook's `(activation, hook)` signature | ★☆☆ | 5 min |
# | 3. `logit_diff` | the IOI metric, per example | `task.end_pos`, `task.answers`, `task.wrong`, `gather` | ★★☆ | 10 min |
# | 4. `patch_mlp_output` | activation patching of one MLP | `run_with_cache`, `with model.hooks(...)` | ★★☆ | 10 min |
# | 5. `could_have_failed` | whether a claim was a real test | a row's draws, baseline and interval | ★☆☆ | 5 min |
#
# Exercises look like a function whose body is a stub that stops with an "Exercise" message; fill it in, run the cell, and the
# check right below tells you whether it is right. The worked versions are in `notebooks/solutions/`.
# %% [markdown]
# ## 1. Setup and model (~5 min)
#
# The first cell of every notebook prepares the environment: on Colab it installs what is missing
# (without touching Colab's torch), it makes plots and attention views draw without internet, and it seeds
# every random number generator.
# %% tags=course-install
from tutorial_lib import setup

env = setup(seed=0)
# %% [markdown]
# `MODEL_NAME = "auto"` loads GPT-2 small if it can, and otherwise the course's **zoo model**: a small
# transformer this package trained on synthetic versions of the course's tasks. The banner says which one
# you got and why. Everything below works with either; the numbers differ.
# %%
from tutorial_lib import load_model
from tutorial_lib.course import reading

MODEL_NAME = "auto"  # or "gpt2", or a zoo name such as "zoo-multitask"
model = load_model(MODEL_NAME)
cfg = model.cfg
print(f"{cfg.n_layers} layers × {cfg.n_heads} heads, d_model={cfg.d_model}, vocabulary {cfg.d_vocab}")
# %% [markdown]
# ## 2. Tokens, logits and the cache (~15 min)
#
# A model reads *tokens*. GPT-2 splits the year 1732 into `" 17"` and `"32"`; the zoo tokenizer was built
# to split years the same way, which is what makes the greater-than task of notebook 01 possible.
# %%
prompt = " The war lasted from the year 1732 to the year 17"
tokens = model.to_tokens(prompt)  # prepends the BOS token <|endoftext|>
str_tokens = model.to_str_tokens(tokens[0])
print(str_tokens)
assert str_tokens[7:9] == [" 17", "32"], "years must split as ' 17' + '32'"
# %% [markdown]
# `run_with_cache` returns the logits and every intermediate activation, named by *hook point*. The
# course names components as the papers do: `a1.h3` is head 3 of layer 1, `m0` is the MLP of layer 0.
# %%
import torch

logits, cache = model.run_with_cache(tokens)
top = logits[0, -1].topk(5)
print("top next tokens:", [model.to_string(int(t)) for t in top.indices])
for name in ["hook_embed", "blocks.0.attn.hook_pattern", "blocks.0.attn.hook_z", "blocks.0.hook_mlp_out"]:
    print(f"{name:28s} {tuple(cache[name].shape)}")
# %% [markdown]
# The *residual stream* is the running sum every layer reads from and writes to: the embedding, plus each
# head's and each MLP's output. A head's output is not cached as such: the cache holds `hook_z`, the head's
# values weighted by its attention pattern (`[batch, pos, head_index, d_head]`), and the head writes
# `z @ W_O` into the stream (`model.W_O` is `[n_layers, n_heads, d_head, d_model]`; the bias `model.b_O[layer]`
# is added once per layer, not per head).
#
# **Exercise 1.** Write `head_output(cache, model, layer, head)`: head `head` of layer `layer`'s output,
# `[batch, pos, d_model]`, from `cache[f"blocks.{layer}.attn.hook_z"]` and `model.W_O`.
#
# <details><summary>Hint</summary>
#
# Take the head's slice `z[:, :, head]` (`[batch, pos, d_head]`) and multiply by `model.W_O[layer, head]`
# (`[d_head, d_model]`) with `@`. Leave out `b_O`.
# </details>
# %%
def head_output(cache, model, layer, head):
    # BEGIN SOLUTION: cache[f"blocks.{layer}.attn.hook_z"][:, :, head] @ model.W_O[layer, head]
    z = cache[f"blocks.{layer}.attn.hook_z"][:, :, head]  # [batch, pos, d_head]
    return z @ model.W_O[layer, head]  # [batch, pos, d_model]
    # END SOLUTION


from tutorial_lib import checks

checks.check_head_output(head_output, model, tokens)
# %% [markdown]
# Which head writes the most into the residual stream at the last position (the one that predicts the next token)?
# %%
norms = {f"a{l}.h{h}": head_output(cache, model, l, h)[0, -1].norm().item() for l in range(cfg.n_layers) for h in range(cfg.n_heads)}
loudest = max(norms, key=norms.get)
resid_norm = cache[f"blocks.{cfg.n_layers - 1}.hook_resid_post"][0, -1].norm().item()
reading.see(f"At the last position, {loudest} writes the largest vector (norm {norms[loudest]:.2f}; the median head "
            f"{sorted(norms.values())[len(norms) // 2]:.2f}; the final residual stream {resid_norm:.2f}). Size is not "
            "importance: a large write can point in a direction the answer never reads. Patching (section 5) measures importance.")
# %% [markdown]
# An attention pattern, drawn by circuitsvis (it works offline: the course inlines its JavaScript). Hover
# over a token to see where each head of layer 0 attends from it.
# %%
from tutorial_lib.viz.figures import attention_view

attention_view(model, tokens, layer=0, cache=cache)
# %% [markdown]
# ## 3. Hooks (~10 min)
#
# A *hook* is a function TransformerLens calls on an activation as it flows through the model; what it
# returns replaces the activation. Always attach hooks with a context manager,
# `with model.hooks(fwd_hooks=[(name, fn)]): ...` — the hooks come off when the block ends, even if an
# error was raised inside it. (A hook left attached silently changes every later result.)
#
# **Exercise 2.** Write `zero_head_hook(z, hook, head)`: `z` is `blocks.L.attn.hook_z`, shaped
# `[batch, pos, head_index, d_head]`; return it with head `head`'s slice set to zero. This is *zero
# ablation* of one head.
#
# <details><summary>Hint</summary>
#
# `z = z.clone()` (never change the activation in place), then `z[:, :, head, :] = 0.0`, and return `z`.
# </details>
# %%
def zero_head_hook(z, hook, head):
    # BEGIN SOLUTION: set z[:, :, head, :] to zero and return z
    z = z.clone()
    z[:, :, head, :] = 0.0
    return z
    # END SOLUTION


checks.check_zero_head_hook(zero_head_hook, model)
# %% [markdown]
# Now use it: how much does the top prediction's logit change when head 0 of layer 1 is switched off?
# %%
from functools import partial

answer = top.indices[0]
with model.hooks(fwd_hooks=[("blocks.1.attn.hook_z", partial(zero_head_hook, head=0))]):
    ablated_logits = model(tokens)
print(f"logit of {model.to_string(int(answer))!r}: {logits[0, -1, answer]:.3f} → {ablated_logits[0, -1, answer]:.3f} with a1.h0 ablated")
from tutorial_lib.core.hooks import assert_no_hooks

assert_no_hooks(model)  # nothing left attached
# %%
from tutorial_lib.core.circuits import ablate_each

heads = [f"a{l}.h{h}" for l in range(cfg.n_layers) for h in range(cfg.n_heads)]
each = ablate_each(model, tokens, lambda lg: lg[:, -1, answer], heads)  # the same logit, each head switched off alone
base, moved = logits[0, -1, answer].item(), ablated_logits[0, -1, answer].item()
most = max(each, key=lambda h: abs(each[h] - base))
rank = 1 + sorted(heads, key=lambda h: -abs(each[h] - base)).index("a1.h0")
reading.see(f"Switching off a1.h0 moves the logit of {model.to_string(int(answer))!r} from {base:.3f} to {moved:.3f} "
            f"({moved - base:+.3f}), rank {rank} of {len(heads)} heads by the size of the move. {most} moves it most, to "
            f"{each[most]:.3f} ({each[most] - base:+.3f}); {sum(abs(v - base) < 0.1 for v in each.values())} heads move it "
            f"by less than 0.1. The head that writes most at this position (section 2), {loudest}, "
            + ("is the same head." if loudest == most else f"moves it by {each[loudest] - base:+.3f}: writing much is not mattering much."))
# %% [markdown]
# ## 4. Task objects (~10 min)
#
# Every task in the course returns the same kind of object: clean prompts, corrupted prompts of the same
# token length, the position to read (`end_pos`), the answers, and a per-example metric. Here is
# indirect object identification (IOI): the model should complete the sentence with the name that
# appeared once (the *indirect object*), not the repeated one (the *subject*). The corrupted prompt
# replaces all three names with unrelated ones.
# %%
from tutorial_lib.course import sizes
from tutorial_lib.tasks.ioi import make_ioi

ioi = make_ioi(model.tokenizer, n=sizes.pick("IOI prompts", full=32, cpu=32, quick=16, model=model), seed=0)
print(ioi)
print("clean:  ", ioi.prompts[0])
print("corrupt:", ioi.corrupt_prompts[0])
print("answer: ", repr(model.to_string(int(ioi.answers[0]))), " wrong:", repr(model.to_string(int(ioi.wrong[0, 0]))))
# %% [markdown]
# **Exercise 3.** The IOI metric is the *logit difference*: at each example's `end_pos`, the logit (the
# model's unnormalised score, before the softmax) of the answer minus the mean logit of the wrong answers
# (`task.wrong`, shaped `[batch, n_wrong]`). Write it per example (return a tensor of shape `[batch]`).
#
# <details><summary>Hint</summary>
#
# `final = logits[torch.arange(len(task)), task.end_pos]` reads each example's own position (`[batch, d_vocab]`);
# then `final.gather(1, task.answers[:, None])[:, 0]` minus `final.gather(1, task.wrong).mean(1)`.
# </details>
# %%
def logit_diff(logits, task):
    # BEGIN SOLUTION: gather the logits at task.end_pos, then answer logit minus mean wrong logit
    final = logits[torch.arange(len(task)), task.end_pos]  # [batch, d_vocab]
    right = final.gather(1, task.answers[:, None])[:, 0]
    wrong = final.gather(1, task.wrong).mean(1)
    return right - wrong
    # END SOLUTION


ioi_logits = model(ioi.clean)
checks.check_logit_diff(logit_diff, ioi, ioi_logits)
# %%
clean_ld = ioi.metric(model(ioi.clean)).mean().item()
corrupt_ld = ioi.metric(model(ioi.corrupt)).mean().item()
print(f"mean logit difference: clean {clean_ld:.2f}, corrupted {corrupt_ld:.2f}, accuracy {ioi.accuracy(ioi_logits).mean():.0%}")
reading.see(f"On the clean prompts the model prefers the indirect object by {clean_ld:.2f} logits on average. On the corrupted "
            f"prompts, whose three names are unrelated to the clean ones, the same answer and wrong tokens score {corrupt_ld:.2f}: "
            "nothing in them points to the clean answer, so this is the floor that patching moves the metric towards.")
# %% [markdown]
# ## 5. Your first patching experiment (~15 min)
#
# *Activation patching* asks which component carries the information that differs between the clean and
# the corrupted prompt: run the clean prompt, but replace one component's output by its value on the
# corrupted prompt. If the metric collapses, that component mattered.
#
# **Exercise 4.** Write `patch_mlp_output(model, clean, corrupt, layer)`: cache
# `blocks.{layer}.hook_mlp_out` on the corrupted tokens, then run the clean tokens with a hook that
# returns the cached value. Return the logits. Use `with model.hooks(...)`.
#
# <details><summary>Hint</summary>
#
# `_, corrupt_cache = model.run_with_cache(corrupt, names_filter=name)`; then
# `with model.hooks(fwd_hooks=[(name, lambda act, hook: corrupt_cache[name])]): return model(clean)`.
# </details>
# %%
def patch_mlp_output(model, clean, corrupt, layer):
    # BEGIN SOLUTION: cache the corrupted MLP output, then return the clean run's logits with it patched in
    name = f"blocks.{layer}.hook_mlp_out"
    _, corrupt_cache = model.run_with_cache(corrupt, names_filter=name)
    with model.hooks(fwd_hooks=[(name, lambda act, hook: corrupt_cache[name])]):
        return model(clean)
    # END SOLUTION


checks.check_patch_hook(patch_mlp_output, model, ioi.clean, ioi.corrupt, layer=0)
# %% [markdown]
# Patch each MLP in turn and plot how much of the clean logit difference survives. (Notebook 01 does this
# for every head and MLP at once, and then goes further, to *paths* between components.)
#
# **Predict first.** Which MLP, patched from the corrupted run, will cost the most logit difference? (An MLP the run
# cannot tell from the costliest, inside the 95% bootstrap interval over the prompts, also counts: the
# [fair-prediction](#glossary) rule of every notebook.)
# %%
PREDICT_IOI_MLP = f"m{cfg.n_layers - 1}"  # LEARNER: None  # your guess: "m0", "m1", ...
# %%
from tutorial_lib.viz.figures import bar

from tutorial_lib.studies.fair import tied_with_best

with torch.no_grad():
    clean_each = ioi.metric(model(ioi.clean))
    change = {f"m{l}": ioi.metric(patch_mlp_output(model, ioi.clean, ioi.corrupt, l)) - clean_each for l in range(cfg.n_layers)}
patched = [clean_ld + c.mean().item() for c in change.values()]
fig = bar([f"m{l}" for l in range(cfg.n_layers)], patched, title="IOI logit difference with one MLP patched from the corrupted run",
          y_title="mean logit difference (clean prompt)", x_title="patched MLP")
fig.add_hline(y=clean_ld, line_dash="dash", annotation_text="clean")
fig.add_hline(y=corrupt_ld, line_dash="dot", annotation_text="corrupted")
fig.show()
worst = min(range(cfg.n_layers), key=lambda l: patched[l])
reading.predicted(PREDICT_IOI_MLP, tied_with_best(change, bound=corrupt_ld - clean_ld), "the MLP whose patch costs most",
                  options=list(change))
reading.see(f"With m{worst} patched the logit difference falls from {clean_ld:.2f} to {patched[worst]:.2f} (the corrupted run: "
            f"{corrupt_ld:.2f}); the others: " + ", ".join(f"m{l} {v:.2f}" for l, v in enumerate(patched) if l != worst) + ". "
            f"The hook replaces m{worst}'s output at *every* position, the name positions included. "
            + (f"Its patch closes {(clean_ld - patched[worst]) / (clean_ld - corrupt_ld):.0%} of the gap between clean and "
               f"corrupted: m{worst}'s output holds much of which name is which"
               if (clean_ld - patched[worst]) > 0.5 * (clean_ld - corrupt_ld) else
               f"Its patch closes only {(clean_ld - patched[worst]) / (clean_ld - corrupt_ld):.0%} of the gap between clean "
               "and corrupted: no single MLP holds which name is which")
            + "; at which position, notebook 01's position-by-position sweep says.")
# %% [markdown]
# ## 6. The ablation panel, and claims that could fail (~15 min)
#
# Every notebook ends its main sections with a panel like this one: click a head or an MLP to switch it
# off (zero ablation) and watch the metric respond. Which components does IOI need? Try a few, then open the
# answer below the panel.
# %%
from tutorial_lib.core.circuits import run_with_ablation
from tutorial_lib.viz.widgets import AblationPanel


def evaluate(ablated):
    with torch.no_grad():
        logits = run_with_ablation(model, ioi.clean, ablated) if ablated else model(ioi.clean)
    per_example = ioi.metric(logits)
    return {"metrics": {"logit diff": per_example.mean().item(), "accuracy": ioi.accuracy(logits).mean().item()},
            "x": list(range(len(ioi))), "y": per_example.tolist()}


panel = AblationPanel(model, evaluate, title="IOI: ablate components", x_title="example", y_title="logit difference")
panel
# %% [markdown]
# The panel can also be driven from code, which is how the course's tests check it:
# %%
before = panel.result["metrics"]["logit diff"]
mlps = [f"m{l}" for l in range(cfg.n_layers)]
after = panel.set_ablated(mlps)["metrics"]["logit diff"]
print(f"logit difference {before:.2f} → {after:.2f} with every MLP ablated")
# %% [markdown]
# Any ablation moves the metric a little, so "it changed" says nothing. The question is whether the MLPs matter
# *more than components picked at random*: a **size-matched control** ablates as many randomly drawn heads
# (`size_matched_random`, twenty seeds), through the same panel. A claim is shown as holding only when it could have
# failed here: the control has enough distinct draws, and the margin over the most damaging draw is larger than the
# spread over prompts (a bootstrap interval that excludes 0). Otherwise it says "not testable on this model", and why.
# %%
from tutorial_lib.course.claims import beyond_noise, check, enough_draws
from tutorial_lib.studies.start import versus_random_heads


def against_random_heads(name, label, components, exclude=()):
    v = versus_random_heads(panel, components, n_draws=20, exclude=exclude)
    check(name, v.test(label), v.beats, [enough_draws(v.possible, what=f"random sets of {len(components)} heads"),
                                         beyond_noise(v.margins(), what="the margin over the most damaging set, per prompt")])
    return v


every = against_random_heads("00.mlps-beat-random-heads", "every MLP", mlps)
# %% [markdown]
# One MLP can decide that comparison alone. Take out the MLP whose single ablation hurts most, and ask the same of
# the rest:
# %%
one_each = {m: panel.set_ablated([m])["metrics"]["logit diff"] for m in mlps}
strongest = min(one_each, key=one_each.get)
rest = against_random_heads("00.mlps-beyond-the-strongest", f"every MLP but {strongest}",
                            [m for m in mlps if m != strongest], exclude=[strongest])
reading.see(f"Ablating all {len(mlps)} MLPs moves the logit difference by {every.value - before:+.2f}, and without "
            f"{strongest} (alone {one_each[strongest] - before:+.2f}) the other {len(rest.components)} still move it by "
            f"{rest.value - rest.before:+.2f}; {len(every.controls)} random sets of heads moved it by "
            f"{min(c - before for c in every.controls):+.2f} to {max(c - before for c in every.controls):+.2f}. "
            + ("The MLPs matter more than random heads even without the strongest." if rest.beats else
               "Beyond the strongest MLP, the others are no more important than random heads."))
_ = panel.set_ablated([])  # back to no ablation (`_ =` keeps the returned result from being echoed)
# %% [markdown]
# **Exercise 5.** Each claim above printed one of three outcomes: ✔ holds, ✗ fails, or ○ *not testable on this model*.
# Below are four claims from a run, each with its result and what the run says about its power. Write
# `could_have_failed(row)`: True when the claim was a real test, one whose outcome could have gone either way on this
# run, whatever it actually was. A row has `draws` (distinct control draws possible), a `baseline` with its `range`,
# and `interval` (the 95% bootstrap interval of the claim's margin).
#
# <details><summary>Hint 1: the idea</summary>
#
# A result teaches nothing when no other result was possible: a control that can be drawn only once, a baseline that
# sits on its floor or ceiling, a margin that the run's own noise could produce.
# </details>
# <details><summary>Hint 2: the thresholds</summary>
#
# The course's rules are in `tutorial_lib.course.claims`: at least `MIN_DRAWS` draws; the baseline at least
# `BOUND_ROOM` of its range away from both ends; an interval that does not contain 0.
# </details>
# %%
import pandas as pd
from tutorial_lib.course.checks.nb00 import claim_table

display(pd.DataFrame(claim_table()).set_index("claim"))


def could_have_failed(row):
    # BEGIN SOLUTION: check the draws, the baseline's distance from both ends of its range, and the interval against 0
    lo, hi = row["range"]
    room = 0.05 * (hi - lo)
    return (row["draws"] >= 20 and lo + room <= row["baseline"] <= hi - room
            and (row["interval"][0] > 0 or row["interval"][1] < 0))
    # END SOLUTION


checks.check_could_have_failed(could_have_failed)
# %%
few = ioi.subset(range(sizes.pick("prompts for the single ablations", full=len(ioi), cpu=8, quick=4, model=model)))
single = ablate_each(model, few.clean, few.metric)  # every head and MLP, zero-ablated alone
base_ld = few.metric(model(few.clean)).mean().item()
needed = sorted((c for c in single if single[c] < 0.5 * base_ld), key=single.get)
mild = sorted((c for c in single if 0.5 * base_ld <= single[c] < 0.9 * base_ld), key=single.get)
reading.answer("Which components does IOI need?",
               f"Zero-ablated one at a time (all {len(single)} heads and MLPs, {len(few)} prompts), "
               + (", ".join(f"**{c}** ({single[c]:.2f})" for c in needed) + (" takes" if len(needed) == 1 else " each take") + f" the logit difference below half of its clean {base_ld:.2f}"
                  if needed else f"no single component takes the logit difference below half of its clean {base_ld:.2f}")
               + ("; " + ", ".join(f"{c} ({single[c]:.2f})" for c in mild[:6]) + " cost 10–50%" if mild else "")
               + f"; the other {len(single) - len(needed) - len(mild)} cost less than 10% each. Ablating every MLP together gives "
                 f"{after:.2f}. Single ablations miss components that back each other up: switch pairs off in the panel to find them.")
# %% [markdown]
# ## The claims of this notebook
#
# Every notebook ends with this table: each claim, its outcome, and the test it made (or why it was not testable).
# %%
from tutorial_lib.course import claims

claims.summary("00", record_as="00", model=model)
# %% [markdown]
# <a id="glossary"></a>
# ## Glossary
#
# Every notebook links here; each term is defined once.
#
# | term | meaning |
# | --- | --- |
# | residual stream | the running sum of the embedding and every head's and MLP's output; each layer reads it and adds to it |
# | head, q / k / v | an attention head reads the residual stream three ways: its *query* at the position it attends from, *keys* (where to attend) and *values* (what to copy) at the positions it attends to |
# | MLP | the feed-forward block of a layer; it works on each position on its own |
# | LayerNorm | the normalisation each block applies to what it reads; recomputing it on a patched input is part of an exact patch |
# | logit difference | the answer's logit minus a wrong answer's, at the final position (END): the IOI metric |
# | probability difference | greater-than's metric: probability on years above YY minus on years at or below it |
# | clean / corrupted prompt | a pair that differs where the task's information sits (a name, a year); the corrupted one carries no answer |
# | END, YY | the position where the answer is predicted; greater-than's start-year position |
# | hook, cache | a function run on one activation during the forward pass; a record of the activations of one run |
# | activation patching | run the clean prompt with one component's output taken from the corrupted run (*noising*), or the reverse (*denoising*) |
# | ablation: zero, mean, resample | replace a component's output by 0, by its mean over a dataset, or by its value on another example |
# | path patching | the change of a *sender*'s output reaches only a *receiver*'s input (an MLP's, a head's q/k/v, the logits); everything else stays clean |
# | edge, node, circuit | an edge is one sender → receiver path; a node one component; a circuit a set of them that is meant to do the task |
# | EAP, EAP-IG | edge attribution patching: each edge's score is the sender's change times the metric's gradient at the receiver's input (a linear estimate of patching it); EAP-IG averages that gradient along the way from corrupted to clean inputs |
# | faithfulness f(C) | (m(C) − m(∅)) / (m(M) − m(∅)): the metric with only circuit C's edges clean, from the empty circuit (0) to the whole model (1) |
# | CPR, CMD | areas under a faithfulness curve over circuit sizes: CPR = ∫ f (higher is better), CMD = ∫ \|1 − f\| (lower is better) |
# | AUROC | the chance that a method ranks a true circuit item above a non-circuit one (0.5: no better than random) |
# | Jaccard | the overlap of two sets: their intersection over their union |
# | induction head, previous-token head | a head that attends from a repeated token to what followed its earlier copy and copies it; a head that attends to the previous token (K-composition: its output feeds the induction head's keys) |
# | participation ratio | an effective number of directions a head writes in (notebook 03) |
# | sufficiency, necessity | the circuit alone keeps the behaviour; removing it takes the behaviour away |
# | control: random, type- / layer-matched | circuits drawn at random of the same size (with the same make-up of heads and MLPs, or the same heads per layer): what a claim must beat |
# | permutation p, bootstrap interval | how often a shuffled or resampled run is at least as extreme; the range that resampling the examples gives a mean |
# | claim: ✔ / ✗ / ○ | holds / fails / not testable on this model (the control had no room: too few draws, a baseline at 0 or 1, a saturated sweep) |
# | fair prediction | a prediction counts as right when the run cannot tell it from its own answer (`tutorial_lib.studies.fair`) |
# %% [markdown]
# ## Where next
#
# * **01 · greater-than** — path patching with MLPs, step by step, to find how a model compares years.
# * **02 · consistency and specificity** — per-example circuits over five tasks: are they the same circuit each time, and is it the task's own?
# * **03 · spectral recipe** — watch attention-head circuits form during training and test whether they are causal.
# * **04 · comparing methods** — path patching, EAP, EAP-IG and exact patching on one task, judged by one yardstick: faithfulness curves.
