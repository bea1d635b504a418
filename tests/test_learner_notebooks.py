"""Test it like a learner (issue 17, item 7): every learner notebook, run with the usual wrong answers put
into its exercises, must have its checks reject each one with the message meant for it.

For each learner notebook ``notebooks/0?_*.ipynb``, one kernel runs the cells in order on the offline default
model (tests/learner_run.py). At each exercise it runs the cell as shipped (the check must say the exercise
is not written yet), then once per wrong answer in :data:`WRONG` with the exercise's ``def`` replaced (the
check must raise ``ExerciseError`` with a message matching the registered pattern), then the solution's cell
(it must pass, so that later cells have what they need). Every exercise of every learner notebook must have
at least one registered wrong answer: :func:`test_every_exercise_has_wrong_answers` fails otherwise.

The wrong answers are the slips the checks name (tests/test_checks_nb0*.py feed the same slips to the checks on
tiny models); here they run in the notebooks, on the model and the arguments a learner's check gets. The
kernel runs offline at ``TUTORIAL_SIZE=quick`` (see :func:`kernel_env`): about 3 minutes for the five notebooks
on a 2-core CPU. ``KNOWN_GAPS`` lists wrong answers that a check accepts in its notebook, or rejects without
an ``ExerciseError`` that says why; they run too, as strict xfails, so that a fixed check shows up (its entry then
moves to ``WRONG``).
"""
from __future__ import annotations

import os
import re
import textwrap
from functools import lru_cache
from pathlib import Path

import nbformat
import pytest

from learner_run import SOLUTION, UNFINISHED, exercise_functions, is_exercise_cell, run_learner_notebook

ROOT = Path(__file__).resolve().parents[1]
LEARNER = sorted((ROOT / "notebooks").glob("0?_*.ipynb"))
SOLUTIONS = ROOT / "notebooks" / "solutions"
DROP = ("TUTORIAL_MODEL", "HF_ENDPOINT", "TUTORIAL_SIZE", "TUTORIAL_CLAIMS")
# notebooks whose cells after the last exercise are not run (they take long and hold no check)
STOP_AFTER_LAST_EXERCISE: set[str] = set()


def W(source: str) -> str:
    return textwrap.dedent(source).strip("\n")


# {notebook: {exercise function: {wrong answer: (source of the whole wrong def, regex the check's message matches)}}}
WRONG: dict[str, dict[str, dict[str, tuple[str, str]]]] = {
    "00_start_here": {
        "zero_head_hook": {
            "zeros every head": (W("""
                def zero_head_hook(z, hook, head):
                    return torch.zeros_like(z)
                """), r"zero_head_hook with head=0: .* values differ.* -- your result is all zeros"),
            "forgets to return z": (W("""
                def zero_head_hook(z, hook, head):
                    z = z.clone()
                    z[:, :, head, :] = 0.0
                """), r"zero_head_hook returned None: return the \(modified\) activation"),
            "zeros a position (z[:, head])": (W("""
                def zero_head_hook(z, hook, head):
                    z = z.clone()
                    z[:, head] = 0.0
                    return z
                """), (r"zero_head_hook with head=0: you zeroed position 0 of every head \(z\[:, head\] indexes the pos "
                      r"dimension\): .* z\[:, :, head\] = 0")),
        },
        "logit_diff": {
            "logits[:, -1] instead of end_pos": (W("""
                def logit_diff(logits, task):
                    final = logits[:, -1]
                    right = final.gather(1, task.answers[:, None])[:, 0]
                    return right - final.gather(1, task.wrong).mean(1)
                """), (r"padded to different lengths.*you read the last position \(logits\[:, -1\]\); read each "
                      r"example's task\.end_pos")),
            "end_pos[0] for every example": (W("""
                def logit_diff(logits, task):
                    final = logits[:, int(task.end_pos[0])]
                    right = final.gather(1, task.answers[:, None])[:, 0]
                    return right - final.gather(1, task.wrong).mean(1)
                """), r"you read position task\.end_pos\[0\] for every example"),
            "first wrong answer only": (W("""
                def logit_diff(logits, task):
                    final = logits[torch.arange(len(task)), task.end_pos]
                    return final.gather(1, task.answers[:, None])[:, 0] - final.gather(1, task.wrong[:, :1])[:, 0]
                """), r"you used only the first wrong answer"),
            "sum of the wrong answers": (W("""
                def logit_diff(logits, task):
                    final = logits[torch.arange(len(task)), task.end_pos]
                    return final.gather(1, task.answers[:, None])[:, 0] - final.gather(1, task.wrong).sum(1)
                """), r"you subtracted the sum of the wrong answers' logits"),
            "probabilities": (W("""
                def logit_diff(logits, task):
                    final = logits[torch.arange(len(task)), task.end_pos].softmax(-1)
                    return final.gather(1, task.answers[:, None])[:, 0] - final.gather(1, task.wrong).mean(1)
                """), r"you took probabilities \(a softmax\)"),
            "wrong minus answer": (W("""
                def logit_diff(logits, task):
                    final = logits[torch.arange(len(task)), task.end_pos]
                    return final.gather(1, task.wrong).mean(1) - final.gather(1, task.answers[:, None])[:, 0]
                """), r"the sign is flipped"),
            "mean over the batch": (W("""
                def logit_diff(logits, task):
                    final = logits[torch.arange(len(task)), task.end_pos]
                    return (final.gather(1, task.answers[:, None])[:, 0] - final.gather(1, task.wrong).mean(1)).mean()
                """), r"you returned a single number"),
        },
        "patch_mlp_output": {
            "clean and corrupted swapped": (W("""
                def patch_mlp_output(model, clean, corrupt, layer):
                    name = f"blocks.{layer}.hook_mlp_out"
                    _, cache = model.run_with_cache(clean, names_filter=name)
                    with model.hooks(fwd_hooks=[(name, lambda act, hook: cache[name])]):
                        return model(corrupt)
                """), r"clean and corrupted are swapped -- cache blocks\.0\.hook_mlp_out on `corrupt`"),
            "hook returns the activation": (W("""
                def patch_mlp_output(model, clean, corrupt, layer):
                    name = f"blocks.{layer}.hook_mlp_out"
                    _, cache = model.run_with_cache(corrupt, names_filter=name)
                    with model.hooks(fwd_hooks=[(name, lambda act, hook: act)]):
                        return model(clean)
                """), r"your logits equal the clean run's: the patch changed nothing"),
            "runs the corrupted tokens": (W("""
                def patch_mlp_output(model, clean, corrupt, layer):
                    return model(corrupt)
                """), r"your logits equal the corrupted run's"),
            "last position only": (W("""
                def patch_mlp_output(model, clean, corrupt, layer):
                    name = f"blocks.{layer}.hook_mlp_out"
                    _, cache = model.run_with_cache(corrupt, names_filter=name)

                    def hook(act, hook):
                        act = act.clone()
                        act[:, -1] = cache[name][:, -1]
                        return act

                    with model.hooks(fwd_hooks=[(name, hook)]):
                        return model(clean)
                """), r"you patched only the last position"),
            "layer 0 hard-coded": (W("""
                def patch_mlp_output(model, clean, corrupt, layer):
                    name = "blocks.0.hook_mlp_out"
                    _, cache = model.run_with_cache(corrupt, names_filter=name)
                    with model.hooks(fwd_hooks=[(name, lambda act, hook: cache[name])]):
                        return model(clean)
                """), r"logits with MLP 1 patched: you patched MLP 0 instead of MLP 1: use the `layer` argument"),
            "final position's logits only": (W("""
                def patch_mlp_output(model, clean, corrupt, layer):
                    name = f"blocks.{layer}.hook_mlp_out"
                    _, cache = model.run_with_cache(corrupt, names_filter=name)
                    with model.hooks(fwd_hooks=[(name, lambda act, hook: cache[name])]):
                        return model(clean)[:, -1]
                """), r"the pos dimension \(dim 1, of size \d+\) is missing"),
        },
    },
    "01_greater_than": {
        "prob_diff": {
            "softmax over the year tokens only": (W("""
                def prob_diff(logits, task):
                    probs = task.final_logits(logits).float()[:, task.year_ids].softmax(-1)
                    above = torch.arange(100)[None, :] > task.yy[:, None]
                    return (probs * above).sum(1) - (probs * ~above).sum(1)
                """), r"you took the softmax over the 100 year tokens only: take it over the whole vocabulary"),
            ">= YY counted as correct": (W("""
                def prob_diff(logits, task):
                    probs = task.final_logits(logits).float().softmax(-1)[:, task.year_ids]
                    above = torch.arange(100)[None, :] >= task.yy[:, None]
                    return (probs * above).sum(1) - (probs * ~above).sum(1)
                """), r"YY itself counts as a wrong answer: correct years are strictly greater than YY"),
            "below minus above": (W("""
                def prob_diff(logits, task):
                    probs = task.final_logits(logits).float().softmax(-1)[:, task.year_ids]
                    above = torch.arange(100)[None, :] > task.yy[:, None]
                    return (probs * ~above).sum(1) - (probs * above).sum(1)
                """), r"probability difference per example: .* -- the sign is flipped"),
            "mean over the prompts": (W("""
                def prob_diff(logits, task):
                    probs = task.final_logits(logits).float().softmax(-1)[:, task.year_ids]
                    above = torch.arange(100)[None, :] > task.yy[:, None]
                    return ((probs * above).sum(1) - (probs * ~above).sum(1)).mean()
                """), r"expected shape \(\d+,\), got \(\) -- you returned a single number"),
            "logits[:, -1] instead of END": (W("""
                def prob_diff(logits, task):
                    probs = logits[:, -1].float().softmax(-1)[:, task.year_ids]
                    above = torch.arange(100)[None, :] > task.yy[:, None]
                    return (probs * above).sum(1) - (probs * ~above).sum(1)
                """), (r"padded to different lengths .*: you read the last position \(logits\[:, -1\]\); read each "
                      r"prompt's END")),
        },
        "direct_path_patch": {
            "hook never returns the patched residual": (W("""
                def direct_path_patch(model, task, sender):
                    end = task.end_pos
                    delta = component_output(model, task.corrupt, sender, end) - component_output(model, task.clean, sender, end)
                    rows = torch.arange(len(end))

                    def add_delta(resid, hook):
                        patched = resid.clone()
                        patched[rows, end] += delta

                    last = f"blocks.{model.cfg.n_layers - 1}.hook_resid_post"
                    with torch.no_grad(), model.hooks(fwd_hooks=[(last, add_delta)]):
                        return task.metric(model(task.clean))
                """), r"your result equals the clean run's metric: the hook did not change anything"),
            "delta added at the first residual stream": (W("""
                def direct_path_patch(model, task, sender):
                    end = task.end_pos
                    delta = component_output(model, task.corrupt, sender, end) - component_output(model, task.clean, sender, end)
                    rows = torch.arange(len(end))

                    def add_delta(resid, hook):
                        resid = resid.clone()
                        resid[rows, end] += delta
                        return resid

                    with torch.no_grad(), model.hooks(fwd_hooks=[("blocks.0.hook_resid_pre", add_delta)]):
                        return task.metric(model(task.clean))
                """), (r"metric per prompt with m\d+ -> logits patched at END: you added the difference at "
                      r"blocks\.0\.hook_resid_pre, the model's input: then every layer sees it")),
            "returns the logits": (W("""
                def direct_path_patch(model, task, sender):
                    end = task.end_pos
                    delta = component_output(model, task.corrupt, sender, end) - component_output(model, task.clean, sender, end)
                    rows = torch.arange(len(end))

                    def add_delta(resid, hook):
                        resid = resid.clone()
                        resid[rows, end] += delta
                        return resid

                    last = f"blocks.{model.cfg.n_layers - 1}.hook_resid_post"
                    with torch.no_grad(), model.hooks(fwd_hooks=[(last, add_delta)]):
                        return model(task.clean)
                """), r"expected shape \(\d+,\), got \(\d+, \d+, \d+\)"),
            "forgets to return": (W("""
                def direct_path_patch(model, task, sender):
                    end = task.end_pos
                    delta = component_output(model, task.corrupt, sender, end) - component_output(model, task.clean, sender, end)
                    rows = torch.arange(len(end))

                    def add_delta(resid, hook):
                        resid = resid.clone()
                        resid[rows, end] += delta
                        return resid

                    last = f"blocks.{model.cfg.n_layers - 1}.hook_resid_post"
                    with torch.no_grad(), model.hooks(fwd_hooks=[(last, add_delta)]):
                        metric = task.metric(model(task.clean))
                """), r"direct_path_patch returned None: return the metric per prompt"),
            "clean minus corrupted": (W("""
                def direct_path_patch(model, task, sender):
                    end = task.end_pos
                    delta = component_output(model, task.clean, sender, end) - component_output(model, task.corrupt, sender, end)
                    rows = torch.arange(len(end))

                    def add_delta(resid, hook):
                        resid = resid.clone()
                        resid[rows, end] += delta
                        return resid

                    last = f"blocks.{model.cfg.n_layers - 1}.hook_resid_post"
                    with torch.no_grad(), model.hooks(fwd_hooks=[(last, add_delta)]):
                        return task.metric(model(task.clean))
                """), (r"metric per prompt with m\d+ -> logits patched at END: the sign is flipped: the difference to add "
                      r"is the corrupted output minus the clean one")),
            "replaces the residual by the corrupted output": (W("""
                def direct_path_patch(model, task, sender):
                    end = task.end_pos
                    corrupted = component_output(model, task.corrupt, sender, end)
                    rows = torch.arange(len(end))

                    def add_delta(resid, hook):
                        resid = resid.clone()
                        resid[rows, end] = corrupted
                        return resid

                    last = f"blocks.{model.cfg.n_layers - 1}.hook_resid_post"
                    with torch.no_grad(), model.hooks(fwd_hooks=[(last, add_delta)]):
                        return task.metric(model(task.clean))
                """), (r"metric per prompt with m\d+ -> logits patched at END: you replaced the residual stream at END by "
                      r"the sender's corrupted output \(`=`\): add the difference to it \(`\+=`\)")),
            "activation patching of the sender (every path)": (W("""
                def direct_path_patch(model, task, sender):
                    name = f"blocks.{sender[1:]}.hook_mlp_out"
                    _, cache = model.run_with_cache(task.corrupt, names_filter=name)
                    with torch.no_grad(), model.hooks(fwd_hooks=[(name, lambda act, hook: cache[name])]):
                        return task.metric(model(task.clean))
                """), (r"with m0 -> logits patched at END: you patched the sender's output for every path \(activation "
                      r"patching\); path patching adds its change only to the final residual stream")),
        },
        "path_patch_to_mlp": {
            "clean minus corrupted": (W("""
                def path_patch_to_mlp(model, task, sender, receiver):
                    from tutorial_lib.methods.lens import component_output
                    layer = int(receiver[1:])
                    end, rows = task.end_pos, torch.arange(len(task.end_pos))
                    delta = component_output(model, task.clean, sender, end) - component_output(model, task.corrupt, sender, end)
                    with torch.no_grad():
                        _, cache = model.run_with_cache(task.clean, names_filter=f"blocks.{layer}.hook_resid_mid")
                        resid = cache[f"blocks.{layer}.hook_resid_mid"].clone()
                        resid[rows, end] += delta
                        block = model.blocks[layer]
                        new_out = block.mlp(block.ln2(resid))
                        with model.hooks(fwd_hooks=[(f"blocks.{layer}.hook_mlp_out", lambda out, hook: new_out)]):
                            return task.metric(model(task.clean))
                """), r"the sign is flipped: the change to add is corrupted minus clean"),
            "delta added to hook_resid_mid": (W("""
                def path_patch_to_mlp(model, task, sender, receiver):
                    from tutorial_lib.methods.lens import component_output
                    layer = int(receiver[1:])
                    end, rows = task.end_pos, torch.arange(len(task.end_pos))
                    delta = component_output(model, task.corrupt, sender, end) - component_output(model, task.clean, sender, end)

                    def add(resid, hook):
                        resid = resid.clone()
                        resid[rows, end] += delta
                        return resid

                    with torch.no_grad(), model.hooks(fwd_hooks=[(f"blocks.{layer}.hook_resid_mid", add)]):
                        return task.metric(model(task.clean))
                """), r"you added the change to hook_resid_mid, so every component after it saw"),
            "delta added to hook_resid_pre": (W("""
                def path_patch_to_mlp(model, task, sender, receiver):
                    from tutorial_lib.methods.lens import component_output
                    layer = int(receiver[1:])
                    end, rows = task.end_pos, torch.arange(len(task.end_pos))
                    delta = component_output(model, task.corrupt, sender, end) - component_output(model, task.clean, sender, end)

                    def add(resid, hook):
                        resid = resid.clone()
                        resid[rows, end] += delta
                        return resid

                    with torch.no_grad(), model.hooks(fwd_hooks=[(f"blocks.{layer}.hook_resid_pre", add)]):
                        return task.metric(model(task.clean))
                """), r"you added the change to the receiver's hook_resid_pre"),
            "LayerNorm scale kept clean": (W("""
                def path_patch_to_mlp(model, task, sender, receiver):
                    from tutorial_lib.methods.lens import component_output
                    layer = int(receiver[1:])
                    end, rows = task.end_pos, torch.arange(len(task.end_pos))
                    delta = component_output(model, task.corrupt, sender, end) - component_output(model, task.clean, sender, end)
                    mid, scale = f"blocks.{layer}.hook_resid_mid", f"blocks.{layer}.ln2.hook_scale"
                    with torch.no_grad():
                        _, cache = model.run_with_cache(task.clean, names_filter=lambda n: n in (mid, scale))
                        resid = cache[mid].clone()
                        resid[rows, end] += delta
                        block = model.blocks[layer]
                        x = (resid - resid.mean(-1, keepdim=True)) / cache[scale]
                        if hasattr(block.ln2, "w"):
                            x = x * block.ln2.w + block.ln2.b
                        new_out = block.mlp(x)
                        with model.hooks(fwd_hooks=[(f"blocks.{layer}.hook_mlp_out", lambda out, hook: new_out)]):
                            return task.metric(model(task.clean))
                """), r"the LayerNorm scale was kept at the clean run's value: recompute ln2"),
            "sender patched at every position": (W("""
                def path_patch_to_mlp(model, task, sender, receiver):
                    from tutorial_lib.methods.lens import component_output
                    layer = int(receiver[1:])
                    end = task.end_pos
                    delta = torch.stack([component_output(model, task.corrupt, sender, torch.full_like(end, p))
                                         - component_output(model, task.clean, sender, torch.full_like(end, p))
                                         for p in range(task.clean.shape[1])], 1)
                    with torch.no_grad():
                        _, cache = model.run_with_cache(task.clean, names_filter=f"blocks.{layer}.hook_resid_mid")
                        resid = cache[f"blocks.{layer}.hook_resid_mid"] + delta
                        block = model.blocks[layer]
                        new_out = block.mlp(block.ln2(resid))
                        with model.hooks(fwd_hooks=[(f"blocks.{layer}.hook_mlp_out", lambda out, hook: new_out)]):
                            return task.metric(model(task.clean))
                """), r"you patched the sender at every position: only END carries the change"),
            "hook rebinds instead of returning": (W("""
                def path_patch_to_mlp(model, task, sender, receiver):
                    from tutorial_lib.methods.lens import component_output
                    layer = int(receiver[1:])
                    end, rows = task.end_pos, torch.arange(len(task.end_pos))
                    delta = component_output(model, task.corrupt, sender, end) - component_output(model, task.clean, sender, end)
                    with torch.no_grad():
                        _, cache = model.run_with_cache(task.clean, names_filter=f"blocks.{layer}.hook_resid_mid")
                        resid = cache[f"blocks.{layer}.hook_resid_mid"].clone()
                        resid[rows, end] += delta
                        block = model.blocks[layer]
                        new_out = block.mlp(block.ln2(resid))

                        def replace(out, hook):
                            out = new_out

                        with model.hooks(fwd_hooks=[(f"blocks.{layer}.hook_mlp_out", replace)]):
                            return task.metric(model(task.clean))
                """), r"your result equals the clean run's metric: the MLP's new output never reached the model"),
        },
        "end_search": {
            "step 1 only": (W("""
                def end_search(model, task, threshold):
                    from tutorial_lib.methods.path_discovery import discover_step
                    from tutorial_lib.methods.path_patching import top_senders
                    return set(top_senders(discover_step(model, task, "logits", sender_position="END", progress=False),
                                           threshold=threshold, sign="negative"))
                """), r"you returned step 1's senders only"),
            "a list of (name, effect) pairs": (W("""
                def end_search(model, task, threshold):
                    from tutorial_lib.methods.path_discovery import discover_step
                    from tutorial_lib.methods.path_patching import top_senders
                    step = discover_step(model, task, "logits", sender_position="END", progress=False)
                    return [(c, step.effects[c]) for c in top_senders(step, threshold=threshold, sign="negative")]
                """), r"end_search should return a set of component names"),
            "step 2's finds only": (W("""
                def end_search(model, task, threshold):
                    from tutorial_lib.methods.path_discovery import discover_step
                    from tutorial_lib.methods.path_patching import top_senders
                    first = set(top_senders(discover_step(model, task, "logits", sender_position="END", progress=False),
                                            threshold=threshold, sign="negative"))
                    found = set()
                    for m in [c for c in first if c.startswith("m")]:
                        found |= set(top_senders(discover_step(model, task, m, sender_position="END", progress=False),
                                                 threshold=threshold, sign="negative"))
                    return found
                """), (r"you returned only what step 2 found: add step 1's own senders \(the senders into the logits\) too "
                      r"-- missing \[")),
            "no threshold": (W("""
                def end_search(model, task, threshold):
                    from tutorial_lib.methods.path_discovery import discover_step
                    from tutorial_lib.methods.path_patching import top_senders
                    found = set(top_senders(discover_step(model, task, "logits", sender_position="END", progress=False), sign="negative"))
                    for m in [c for c in found if c.startswith("m")]:
                        found |= set(top_senders(discover_step(model, task, m, sender_position="END", progress=False), sign="negative"))
                    return found
                """), (r"you kept senders whose effects are below the threshold \(\[.*\]\): pass threshold=threshold to "
                      r"top_senders")),
            "both signs kept": (W("""
                def end_search(model, task, threshold):
                    from tutorial_lib.methods.path_discovery import discover_step
                    from tutorial_lib.methods.path_patching import top_senders
                    found = set(top_senders(discover_step(model, task, "logits", sender_position="END", progress=False),
                                            threshold=threshold))
                    for m in [c for c in found if c.startswith("m")]:
                        found |= set(top_senders(discover_step(model, task, m, sender_position="END", progress=False),
                                                 threshold=threshold))
                    return found
                """), (r"whose effects are positive \(patching them \*raises\* the metric\): keep only senders whose path "
                      r"lowers it")),
            "step 2 into the strongest MLP only": (W("""
                def end_search(model, task, threshold):
                    from tutorial_lib.methods.path_discovery import discover_step
                    from tutorial_lib.methods.path_patching import top_senders
                    first = top_senders(discover_step(model, task, "logits", sender_position="END", progress=False),
                                        threshold=threshold, sign="negative")
                    found = set(first)
                    m = next(c for c in first if c.startswith("m"))
                    found |= set(top_senders(discover_step(model, task, m, sender_position="END", progress=False),
                                             threshold=threshold, sign="negative"))
                    return found
                """), r"you ran step 2 into m\d+ only: run a step into every MLP that step 1 found"),
            "step 2 at YY": (W("""
                def end_search(model, task, threshold):
                    from tutorial_lib.methods.path_discovery import discover_step
                    from tutorial_lib.methods.path_patching import top_senders
                    found = set(top_senders(discover_step(model, task, "logits", sender_position="END", progress=False),
                                            threshold=threshold, sign="negative"))
                    for m in [c for c in found if c.startswith("m")]:
                        found |= set(top_senders(discover_step(model, task, m, sender_position="YY", progress=False),
                                                 threshold=threshold, sign="negative"))
                    return found
                """), r'you ran step 2 with the senders at YY \(sender_position="YY"\)'),
        },
        "sufficiency": {
            "corrupts the circuit (necessity)": (W("""
                def sufficiency(model, task, components):
                    keep = set(components)
                    L = model.cfg.n_layers
                    names = ["hook_embed"] + [f"blocks.{l}.attn.hook_z" for l in range(L)] + [f"blocks.{l}.hook_mlp_out" for l in range(L)]
                    _, corrupt_cache = model.run_with_cache(task.corrupt, names_filter=lambda n: n in names)

                    def hook(act, hook):
                        act, old = act.clone(), corrupt_cache[hook.name]
                        if hook.name == "hook_embed":
                            return old if "embed" in keep else act
                        l = int(hook.name.split(".")[1])
                        if hook.name.endswith("hook_mlp_out"):
                            return old if f"m{l}" in keep else act
                        for h in range(model.cfg.n_heads):
                            if f"a{l}.h{h}" in keep:
                                act[:, :, h] = old[:, :, h]
                        return act

                    with torch.no_grad(), model.hooks(fwd_hooks=[(n, hook) for n in names]):
                        return task.metric(model(task.clean))
                """), r"you corrupted the circuit and kept the rest clean \(that is the necessity test\)"),
            "never corrupts the embedding": (W("""
                def sufficiency(model, task, components):
                    keep = set(components)
                    L = model.cfg.n_layers
                    names = [f"blocks.{l}.attn.hook_z" for l in range(L)] + [f"blocks.{l}.hook_mlp_out" for l in range(L)]
                    _, corrupt_cache = model.run_with_cache(task.corrupt, names_filter=lambda n: n in names)

                    def hook(act, hook):
                        act, old = act.clone(), corrupt_cache[hook.name]
                        l = int(hook.name.split(".")[1])
                        if hook.name.endswith("hook_mlp_out"):
                            return act if f"m{l}" in keep else old
                        for h in range(model.cfg.n_heads):
                            if f"a{l}.h{h}" not in keep:
                                act[:, :, h] = old[:, :, h]
                        return act

                    with torch.no_grad(), model.hooks(fwd_hooks=[(n, hook) for n in names]):
                        return task.metric(model(task.clean))
                """), r"the embedding was not corrupted: when 'embed' is not in components"),
            "always corrupts the embedding": (W("""
                def sufficiency(model, task, components):
                    keep = set(components)
                    L = model.cfg.n_layers
                    names = ["hook_embed"] + [f"blocks.{l}.attn.hook_z" for l in range(L)] + [f"blocks.{l}.hook_mlp_out" for l in range(L)]
                    _, corrupt_cache = model.run_with_cache(task.corrupt, names_filter=lambda n: n in names)

                    def hook(act, hook):
                        act, old = act.clone(), corrupt_cache[hook.name]
                        if hook.name == "hook_embed":
                            return old
                        l = int(hook.name.split(".")[1])
                        if hook.name.endswith("hook_mlp_out"):
                            return act if f"m{l}" in keep else old
                        for h in range(model.cfg.n_heads):
                            if f"a{l}.h{h}" not in keep:
                                act[:, :, h] = old[:, :, h]
                        return act

                    with torch.no_grad(), model.hooks(fwd_hooks=[(n, hook) for n in names]):
                        return task.metric(model(task.clean))
                """), r"you corrupted the embedding even though 'embed' is in components"),
            "heads left clean": (W("""
                def sufficiency(model, task, components):
                    keep = set(components)
                    L = model.cfg.n_layers
                    names = ["hook_embed"] + [f"blocks.{l}.hook_mlp_out" for l in range(L)]
                    _, corrupt_cache = model.run_with_cache(task.corrupt, names_filter=lambda n: n in names)

                    def hook(act, hook):
                        act, old = act.clone(), corrupt_cache[hook.name]
                        if hook.name == "hook_embed":
                            return act if "embed" in keep else old
                        l = int(hook.name.split(".")[1])
                        return act if f"m{l}" in keep else old

                    with torch.no_grad(), model.hooks(fwd_hooks=[(n, hook) for n in names]):
                        return task.metric(model(task.clean))
                """), (r"metric per prompt with only \[.*\] clean: the heads outside the circuit were not corrupted: every "
                      r"head not in components must take its output")),
            "minus the metric": (W("""
                def sufficiency(model, task, components):
                    keep = set(components)
                    L = model.cfg.n_layers
                    names = ["hook_embed"] + [f"blocks.{l}.attn.hook_z" for l in range(L)] + [f"blocks.{l}.hook_mlp_out" for l in range(L)]
                    _, corrupt_cache = model.run_with_cache(task.corrupt, names_filter=lambda n: n in names)

                    def hook(act, hook):
                        act, old = act.clone(), corrupt_cache[hook.name]
                        if hook.name == "hook_embed":
                            return act if "embed" in keep else old
                        l = int(hook.name.split(".")[1])
                        if hook.name.endswith("hook_mlp_out"):
                            return act if f"m{l}" in keep else old
                        for h in range(model.cfg.n_heads):
                            if f"a{l}.h{h}" not in keep:
                                act[:, :, h] = old[:, :, h]
                        return act

                    with torch.no_grad(), model.hooks(fwd_hooks=[(n, hook) for n in names]):
                        return -task.metric(model(task.clean))
                """), r"clean: \d+ of \d+ values differ.* -- the sign is flipped"),
            "MLPs never corrupted": (W("""
                def sufficiency(model, task, components):
                    keep = set(components)
                    L = model.cfg.n_layers
                    names = ["hook_embed"] + [f"blocks.{l}.attn.hook_z" for l in range(L)]
                    _, corrupt_cache = model.run_with_cache(task.corrupt, names_filter=lambda n: n in names)

                    def hook(act, hook):
                        act, old = act.clone(), corrupt_cache[hook.name]
                        if hook.name == "hook_embed":
                            return act if "embed" in keep else old
                        l = int(hook.name.split(".")[1])
                        for h in range(model.cfg.n_heads):
                            if f"a{l}.h{h}" not in keep:
                                act[:, :, h] = old[:, :, h]
                        return act

                    with torch.no_grad(), model.hooks(fwd_hooks=[(n, hook) for n in names]):
                        return task.metric(model(task.clean))
                """), (r"clean: the MLPs outside the circuit were not corrupted: every MLP not in components must take "
                      r"its output")),
        },
    },
    "02_consistency_specificity": {
        "edge_score_to_logits": {
            "clean minus corrupted": (W("""
                def edge_score_to_logits(model, task, sender_hook, example):
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
                    delta = kept[sender_hook][example].detach() - corrupt_cache[sender_hook][example]
                    score = (delta * kept[final_hook].grad[example]).sum().item()
                    model.zero_grad(set_to_none=True)
                    return score
                """), (r"edge m0 -> logits, example 0: you have .*, expected .* -- the sign is flipped: the difference is "
                      r"corrupted output minus clean output")),
            "gradient of the batch mean": (W("""
                def edge_score_to_logits(model, task, sender_hook, example):
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
                    task.logit_diff(logits).mean().backward()
                    delta = corrupt_cache[sender_hook][example] - kept[sender_hook][example].detach()
                    score = (delta * kept[final_hook].grad[example]).sum().item()
                    model.zero_grad(set_to_none=True)
                    return score
                """), (r"edge m0 -> logits, example 0: you have .*, expected .* -- that is 1/8 of the edge's score: you "
                      r"backpropagated the mean metric over the batch's 8 prompts")),
            "gradient at the sender (node, not edge)": (W("""
                def edge_score_to_logits(model, task, sender_hook, example):
                    with torch.no_grad():
                        _, corrupt_cache = model.run_with_cache(task.corrupt, names_filter=sender_hook)
                    kept = {}

                    def keep(act, hook):
                        act.retain_grad()
                        kept[hook.name] = act
                        return act

                    with model.hooks(fwd_hooks=[(sender_hook, keep)]):
                        logits = model(task.clean)
                    task.logit_diff(logits)[example].backward()
                    delta = corrupt_cache[sender_hook][example] - kept[sender_hook][example].detach()
                    score = (delta * kept[sender_hook].grad[example]).sum().item()
                    model.zero_grad(set_to_none=True)
                    return score
                """), (r"edge m0 -> logits, example 0: you have .*, expected .* -- that is the gradient taken at the "
                      r"sender's own output, which sums every path from the sender \(its node score\)")),
            "one score per position": (W("""
                def edge_score_to_logits(model, task, sender_hook, example):
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
                    score = (delta * kept[final_hook].grad[example]).sum(-1).detach()
                    model.zero_grad(set_to_none=True)
                    return score
                """), r"edge score m0 -> logits: expected one number, got a tensor of shape \(\d+,\)"),
        },
        "reuse_at_p": {
            "floor instead of ceil": (W("""
                def reuse_at_p(membership, p):
                    n = membership.shape[0]
                    in_shared = membership.sum(0) >= math.floor(p / 100 * n)
                    covered = (membership & in_shared).sum(1).float()
                    return (covered / membership.sum(1).float()).mean().item()
                """), (r"reuse@80 on a \(9, 12\) membership: you have .* -- you rounded down: 80/100 \* 9 = 7\.2, and S_P "
                      r"needs at least ceil of it, 8 circuits, not floor \(7\)")),
            "more than instead of at least": (W("""
                def reuse_at_p(membership, p):
                    n = membership.shape[0]
                    in_shared = membership.sum(0) > math.ceil(p / 100 * n)
                    covered = (membership & in_shared).sum(1).float()
                    return (covered / membership.sum(1).float()).mean().item()
                """), (r"reuse@100 on a \(9, 12\) membership: you have 0\.0000, expected .* -- you kept the components in "
                      r"\*more than\* 9 circuits \(`>`\)")),
            "the size of S_P": (W("""
                def reuse_at_p(membership, p):
                    n = membership.shape[0]
                    return float((membership.sum(0) >= math.ceil(p / 100 * n)).sum())
                """), (r"reuse@100 on a \(9, 12\) membership: you have [\d.]+, expected .* -- you returned \|S_P\|, the "
                      r"size of the shared set")),
            "divides by |S_P|": (W("""
                def reuse_at_p(membership, p):
                    n = membership.shape[0]
                    in_shared = membership.sum(0) >= math.ceil(p / 100 * n)
                    covered = (membership & in_shared).sum(1).float()
                    return (covered / in_shared.sum().float()).mean().item()
                """), (r"reuse@\d+ on a \(9, 12\) membership: you have .* -- you divided each example's overlap "
                      r"\|C_i ∩ S_P\| by \|S_P\|")),
        },
        "size_matched_control": {
            "no shortfall check (numpy's error)": (W("""
                def size_matched_control(circuit, heads, mlps, seed):
                    rng = np.random.default_rng(seed)
                    free_heads = [h for h in heads if h not in circuit]
                    free_mlps = [m for m in mlps if m not in circuit]
                    n_heads = sum(c in heads for c in circuit)
                    n_mlps = sum(c in mlps for c in circuit)
                    return {str(c) for c in rng.choice(free_heads, n_heads, replace=False)} | \\
                           {str(c) for c in rng.choice(free_mlps, n_mlps, replace=False)}
                """), (r"it has 9 MLPs but only 3 lie outside it\. You raised ValueError\('Cannot take a larger sample"
                      r".*make the message name the shortfall: how many MLPs are needed \(9\) and how many are left \(3\)")),
            "a smaller control when too few are left": (W("""
                def size_matched_control(circuit, heads, mlps, seed):
                    rng = np.random.default_rng(seed)
                    free_heads = [h for h in heads if h not in circuit]
                    free_mlps = [m for m in mlps if m not in circuit]
                    n_heads = min(sum(c in heads for c in circuit), len(free_heads))
                    n_mlps = min(sum(c in mlps for c in circuit), len(free_mlps))
                    return {str(c) for c in rng.choice(free_heads, n_heads, replace=False)} | \\
                           {str(c) for c in rng.choice(free_mlps, n_mlps, replace=False)}
                """), r"it has 9 MLPs but only 3 lie outside it, so no size-matched control exists; you returned \["),
            "an error without the counts": (W("""
                def size_matched_control(circuit, heads, mlps, seed):
                    rng = np.random.default_rng(seed)
                    free_heads = [h for h in heads if h not in circuit]
                    free_mlps = [m for m in mlps if m not in circuit]
                    n_heads = sum(c in heads for c in circuit)
                    n_mlps = sum(c in mlps for c in circuit)
                    if n_heads > len(free_heads) or n_mlps > len(free_mlps):
                        raise ValueError("not enough components outside the circuit")
                    return {str(c) for c in rng.choice(free_heads, n_heads, replace=False)} | \\
                           {str(c) for c in rng.choice(free_mlps, n_mlps, replace=False)}
                """), (r"You raised ValueError\('not enough components outside the circuit'\); make the message name "
                      r"the shortfall")),
            "draws from every head, circuit included": (W("""
                def size_matched_control(circuit, heads, mlps, seed):
                    rng = np.random.default_rng(seed)
                    free_mlps = [m for m in mlps if m not in circuit]
                    n_heads = sum(c in heads for c in circuit)
                    n_mlps = sum(c in mlps for c in circuit)
                    return {str(c) for c in rng.choice(heads, n_heads, replace=False)} | \\
                           {str(c) for c in rng.choice(free_mlps, n_mlps, replace=False)}
                """), r"overlaps the circuit in \['a\d+\.h\d+'\]: draw only from components outside it"),
            "heads and MLPs pooled": (W("""
                def size_matched_control(circuit, heads, mlps, seed):
                    rng = np.random.default_rng(seed)
                    pool = [c for c in heads + mlps if c not in circuit]
                    return {str(c) for c in rng.choice(pool, len(circuit), replace=False)}
                """), r"circuit \[.*\] has \d+ head\(s\) and \d+ MLP\(s\); your control \[.*\] has \d+ and \d+"),
            "unseeded": (W("""
                def size_matched_control(circuit, heads, mlps, seed):
                    rng = np.random.default_rng()
                    free_heads = [h for h in heads if h not in circuit]
                    free_mlps = [m for m in mlps if m not in circuit]
                    n_heads = sum(c in heads for c in circuit)
                    n_mlps = sum(c in mlps for c in circuit)
                    return {str(c) for c in rng.choice(free_heads, n_heads, replace=False)} | \\
                           {str(c) for c in rng.choice(free_mlps, n_mlps, replace=False)}
                """), r"seed 0 gave .* and then .*: the same seed must give the same control"),
            "seed ignored": (W("""
                def size_matched_control(circuit, heads, mlps, seed):
                    rng = np.random.default_rng(0)
                    free_heads = [h for h in heads if h not in circuit]
                    free_mlps = [m for m in mlps if m not in circuit]
                    n_heads = sum(c in heads for c in circuit)
                    n_mlps = sum(c in mlps for c in circuit)
                    return {str(c) for c in rng.choice(free_heads, n_heads, replace=False)} | \\
                           {str(c) for c in rng.choice(free_mlps, n_mlps, replace=False)}
                """), r"10 seeds all gave \[.*\]: the control must be random"),
        },
        "paired_permutation_p": {
            "strictly greater": (W("""
                def paired_permutation_p(a, b, n_permutations, seed):
                    d = (a - b).double()
                    gen = torch.Generator().manual_seed(seed)
                    signs = torch.randint(0, 2, (n_permutations, len(d)), generator=gen).double() * 2 - 1
                    stats = (signs * d).mean(1)
                    return ((stats > d.mean()).sum().item() + 1) / (n_permutations + 1)
                """), (r"no difference at all: you have p = .*, expected about 1 \(every permuted statistic equals the "
                      r"observed one")),
            "no +1": (W("""
                def paired_permutation_p(a, b, n_permutations, seed):
                    d = (a - b).double()
                    gen = torch.Generator().manual_seed(seed)
                    signs = torch.randint(0, 2, (n_permutations, len(d)), generator=gen).double() * 2 - 1
                    stats = (signs * d).mean(1)
                    return (stats >= d.mean() - 1e-12).sum().item() / n_permutations
                """), r"a clear effect: p = 0 is not in \(0, 1\]; with the \+1 rule p is never 0"),
            "two-sided": (W("""
                def paired_permutation_p(a, b, n_permutations, seed):
                    d = (a - b).double()
                    gen = torch.Generator().manual_seed(seed)
                    signs = torch.randint(0, 2, (n_permutations, len(d)), generator=gen).double() * 2 - 1
                    stats = (signs * d).mean(1).abs()
                    return ((stats >= d.mean().abs() - 1e-12).sum().item() + 1) / (n_permutations + 1)
                """), (r"a small effect: you have p = .*, expected about .* -- that is the two-sided p-value \(\|permuted "
                      r"mean\| against \|observed mean\|\): the test is one-sided")),
            "wrong tail": (W("""
                def paired_permutation_p(a, b, n_permutations, seed):
                    d = (a - b).double()
                    gen = torch.Generator().manual_seed(seed)
                    signs = torch.randint(0, 2, (n_permutations, len(d)), generator=gen).double() * 2 - 1
                    stats = (signs * d).mean(1)
                    return ((stats <= d.mean() + 1e-12).sum().item() + 1) / (n_permutations + 1)
                """), (r"a clear effect: you have p = 1, expected about 9\.999e-05 -- you counted the permuted means at "
                      r"or \*below\* the observed one \(the wrong tail")),
        },
    },
    "03_spectral_recipe": {
        "participation_ratio": {
            "mean-centred": (W("""
                def participation_ratio(X):
                    X = X - X.mean(0)
                    s = torch.linalg.svdvals(X.double())
                    p = s**2 / (s**2).sum()
                    p = p[p > 0]
                    return float(torch.exp(-(p * p.log()).sum()))
                """), (r"PR of the identity 3×3 \(3 equal directions\): you have 2, expected 3 -- you centred X \(subtracted "
                      r"its mean row\): this PR is taken of X as it is, not mean-centred")),
            "entropy without exp": (W("""
                def participation_ratio(X):
                    s = torch.linalg.svdvals(X.double())
                    p = s**2 / (s**2).sum()
                    p = p[p > 0]
                    return float(-(p * p.log()).sum())
                """), (r"PR of the identity 3×3 \(3 equal directions\): you have 1\.099, expected 3 -- that is the entropy "
                      r"-Σ p log p itself: the PR is its exponential")),
            "singular values not squared": (W("""
                def participation_ratio(X):
                    s = torch.linalg.svdvals(X.double())
                    p = s / s.sum()
                    p = p[p > 0]
                    return float(torch.exp(-(p * p.log()).sum()))
                """), r"PR of the random 40×6: you have .*, expected .* -- p must come from the \*squared\* singular values"),
            "(sum s^2)^2 / sum s^4": (W("""
                def participation_ratio(X):
                    s2 = torch.linalg.svdvals(X.double()) ** 2
                    return float(s2.sum() ** 2 / (s2 ** 2).sum())
                """), (r"PR of the random 40×6: you have .*, expected .* -- that is the order-2 participation ratio "
                      r"\(Σσ²\)² / Σσ⁴")),
        },
        "induction_selectivity": {
            "reads a_pos, not a_pos + 1": (W("""
                def induction_selectivity(att, a_pos, base_pos):
                    rows = torch.arange(att.shape[0])
                    target = att[rows, :, :, a_pos].mean(0)
                    idx = base_pos[:, None, None, :].expand(-1, att.shape[1], att.shape[2], -1)
                    return target / att.gather(3, idx).mean(3).mean(0).clamp(min=1e-8)
                """), (r"induction selectivity \[n_layers, n_heads\]: you read the attention to a_pos, the earlier A itself "
                      r"\(the duplicate-token target\)")),
            "no mean over prompts": (W("""
                def induction_selectivity(att, a_pos, base_pos):
                    rows = torch.arange(att.shape[0])
                    target = att[rows, :, :, a_pos + 1]
                    idx = base_pos[:, None, None, :].expand(-1, att.shape[1], att.shape[2], -1)
                    return target / att.gather(3, idx).mean(3).clamp(min=1e-8)
                """), r"expected shape \(\d+, \d+\), got \(\d+, \d+, \d+\) -- you have an extra dimension 0"),
            "baseline over target": (W("""
                def induction_selectivity(att, a_pos, base_pos):
                    rows = torch.arange(att.shape[0])
                    target = att[rows, :, :, a_pos + 1].mean(0)
                    idx = base_pos[:, None, None, :].expand(-1, att.shape[1], att.shape[2], -1)
                    return att.gather(3, idx).mean(3).mean(0) / target.clamp(min=1e-8)
                """), (r"induction selectivity \[n_layers, n_heads\]: the ratio is upside down: selectivity is the target "
                      r"attention divided by the baseline attention")),
            "mean of the per-example ratios": (W("""
                def induction_selectivity(att, a_pos, base_pos):
                    rows = torch.arange(att.shape[0])
                    target = att[rows, :, :, a_pos + 1]
                    idx = base_pos[:, None, None, :].expand(-1, att.shape[1], att.shape[2], -1)
                    return (target / att.gather(3, idx).mean(3).clamp(min=1e-8)).mean(0)
                """), (r"induction selectivity \[n_layers, n_heads\]: you averaged the per-example ratios: divide the "
                      r"mean \(over examples\) of the target attention by the mean of the baseline attention")),
        },
        "layer_matched_control": {
            "draws the candidates": (W("""
                def layer_matched_control(heads, n_heads, seed):
                    return list(heads)
                """), r"control for \['a1\.h0', 'a1\.h3'\] \(seed 0\) contains candidate head\(s\)"),
            "every head from layer 0": (W("""
                def layer_matched_control(heads, n_heads, seed):
                    rng = np.random.default_rng(seed)
                    pool = [f"a0.h{i}" for i in range(n_heads) if f"a0.h{i}" not in heads]
                    return list(rng.choice(pool, size=len(heads), replace=False))
                """), r"control for \['a1\.h0', 'a1\.h3'\] \(seed 0\) has heads per layer \{0: 2\}, expected \{1: 2\}"),
            "unseeded": (W("""
                def layer_matched_control(heads, n_heads, seed):
                    rng = np.random.default_rng()
                    layers = {}
                    for h in heads:
                        layers.setdefault(int(h.split(".")[0][1:]), []).append(h)
                    out = []
                    for layer, chosen in sorted(layers.items()):
                        pool = [f"a{layer}.h{i}" for i in range(n_heads) if f"a{layer}.h{i}" not in heads]
                        out += list(rng.choice(pool, size=len(chosen), replace=False))
                    return out
                """), r"the same seed \(\d+\) gave different controls"),
            "seed ignored": (W("""
                def layer_matched_control(heads, n_heads, seed):
                    rng = np.random.default_rng(0)
                    layers = {}
                    for h in heads:
                        layers.setdefault(int(h.split(".")[0][1:]), []).append(h)
                    out = []
                    for layer, chosen in sorted(layers.items()):
                        pool = [f"a{layer}.h{i}" for i in range(n_heads) if f"a{layer}.h{i}" not in heads]
                        out += list(rng.choice(pool, size=len(chosen), replace=False))
                    return out
                """), r"six seeds all gave the same control .*: the draw must depend on the seed"),
        },
    },
    "04_comparing_methods": {
        "edge_score_at_alpha": {
            "gradient at the block-0 input": (W("""
                def edge_score_at_alpha(model, task, sender, example, alpha):
                    clean, corrupt = task.clean[example:example + 1], task.corrupt[example:example + 1]
                    x_clean = sender_output(model, clean, "embed")
                    x_corrupt = sender_output(model, corrupt, "embed")
                    delta = sender_output(model, corrupt, sender) - sender_output(model, clean, sender)
                    kept = {}

                    def interpolate(act, hook):
                        x = (x_corrupt + alpha * (x_clean - x_corrupt)).requires_grad_(True)
                        kept["input"] = x
                        return x

                    with model.hooks(fwd_hooks=[("blocks.0.hook_resid_pre", interpolate)]):
                        logits = model(clean)
                    metric = task.subset([example]).metric(logits).sum()
                    grad, = torch.autograd.grad(metric, kept["input"])
                    return (delta * grad).sum().item()
                """), (r"-> logits, example \d+: the mean over alpha = 1/3\.\.1 of your scores is .*, the library's EAP-IG "
                      r"score is")),
            "the logit difference, not the task's metric": (W("""
                def edge_score_at_alpha(model, task, sender, example, alpha):
                    clean, corrupt = task.clean[example:example + 1], task.corrupt[example:example + 1]
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
                    metric = task.subset([example]).logit_diff(logits).sum()
                    grad, = torch.autograd.grad(metric, kept["final"])
                    return (delta * grad).sum().item()
                """), (r"-> logits, example \d+: your mean over alpha is .*: you took the gradient of the logit difference; "
                      r"take it of the task's own metric")),
            "returns 0.0": (W("""
                def edge_score_at_alpha(model, task, sender, example, alpha):
                    return 0.0
                """), r"-> logits, example \d+: your score is 0 at every alpha"),
            "no interpolation (plain EAP)": (W("""
                def edge_score_at_alpha(model, task, sender, example, alpha):
                    clean, corrupt = task.clean[example:example + 1], task.corrupt[example:example + 1]
                    delta = sender_output(model, corrupt, sender) - sender_output(model, clean, sender)
                    kept = {}

                    def keep(act, hook):
                        kept["final"] = act
                        act.retain_grad()
                        return act

                    final_hook = f"blocks.{model.cfg.n_layers - 1}.hook_resid_post"
                    with model.hooks(fwd_hooks=[(final_hook, keep)]):
                        logits = model(clean)
                    metric = task.subset([example]).metric(logits).sum()
                    grad, = torch.autograd.grad(metric, kept["final"])
                    return (delta * grad).sum().item()
                """), r"every alpha gives the same score, plain EAP's .*: the input is not being interpolated"),
            "clean minus corrupted": (W("""
                def edge_score_at_alpha(model, task, sender, example, alpha):
                    clean, corrupt = task.clean[example:example + 1], task.corrupt[example:example + 1]
                    x_clean = sender_output(model, clean, "embed")
                    x_corrupt = sender_output(model, corrupt, "embed")
                    delta = sender_output(model, clean, sender) - sender_output(model, corrupt, sender)
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
                """), r"the sign is flipped: the sender difference is corrupted output minus clean output"),
            "interpolates from clean towards corrupted": (W("""
                def edge_score_at_alpha(model, task, sender, example, alpha):
                    clean, corrupt = task.clean[example:example + 1], task.corrupt[example:example + 1]
                    x_clean = sender_output(model, clean, "embed")
                    x_corrupt = sender_output(model, corrupt, "embed")
                    delta = sender_output(model, corrupt, sender) - sender_output(model, clean, sender)
                    kept = {}

                    def interpolate(act, hook):
                        return x_clean + alpha * (x_corrupt - x_clean)

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
                """), (r"you walked from the clean input towards the corrupted one \(clean \+ alpha \* \(corrupt - "
                      r"clean\)\)")),
            "returns the product, not its sum": (W("""
                def edge_score_at_alpha(model, task, sender, example, alpha):
                    clean, corrupt = task.clean[example:example + 1], task.corrupt[example:example + 1]
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
                    return delta * grad
                """), (r"edge_score_at_alpha\(model, task, '.*', \d+, alpha=1/3\): expected one number, got a tensor of "
                      r"shape")),
        },
        "faithfulness_of": {
            "m(C) / m(M)": (W("""
                def faithfulness_of(model, task, circuit):
                    full = fa.full_circuit(fa.EAPGraph.from_model(model))
                    m_c, m_full, m_empty = fa.patched_metric(model, task, torch.stack([circuit, full, torch.zeros_like(full)])).tolist()
                    return m_c / m_full
                """), r"faithfulness_of: that is m\(C\) / m\(M\): subtract the empty circuit's metric"),
            "1 - f": (W("""
                def faithfulness_of(model, task, circuit):
                    full = fa.full_circuit(fa.EAPGraph.from_model(model))
                    m_c, m_full, m_empty = fa.patched_metric(model, task, torch.stack([circuit, full, torch.zeros_like(full)])).tolist()
                    return (m_full - m_c) / (m_full - m_empty)
                """), r"faithfulness_of: that is 1 - f: the numerator is m\(C\) - m\(∅\)"),
            "m(C) itself": (W("""
                def faithfulness_of(model, task, circuit):
                    full = fa.full_circuit(fa.EAPGraph.from_model(model))
                    m_c, m_full, m_empty = fa.patched_metric(model, task, torch.stack([circuit, full, torch.zeros_like(full)])).tolist()
                    return m_c
                """), r"faithfulness_of: that is m\(C\) itself"),
        },
        "cpr_and_cmd": {
            "the mean of f": (W("""
                def cpr_and_cmd(fractions, f):
                    return sum(f) / len(f), sum(abs(1 - v) for v in f) / len(f)
                """), r"cpr_and_cmd: the mean of f, not an area"),
            "left rectangles": (W("""
                def cpr_and_cmd(fractions, f):
                    cpr = sum((fractions[i + 1] - fractions[i]) * f[i] for i in range(len(f) - 1))
                    cmd = sum((fractions[i + 1] - fractions[i]) * abs(1 - f[i]) for i in range(len(f) - 1))
                    return cpr, cmd
                """), r"cpr_and_cmd: left rectangles"),
            "CMD = 1 - CPR": (W("""
                def cpr_and_cmd(fractions, f):
                    cpr = sum((fractions[i + 1] - fractions[i]) * (f[i] + f[i + 1]) / 2 for i in range(len(f) - 1))
                    return cpr, 1 - cpr
                """), r"cpr_and_cmd: CMD is the area under \|1 - f\|, not 1 - CPR"),
            "no absolute value": (W("""
                def cpr_and_cmd(fractions, f):
                    cpr = sum((fractions[i + 1] - fractions[i]) * (f[i] + f[i + 1]) / 2 for i in range(len(f) - 1))
                    cmd = sum((fractions[i + 1] - fractions[i]) * ((1 - f[i]) + (1 - f[i + 1])) / 2 for i in range(len(f) - 1))
                    return cpr, cmd
                """), r"cpr_and_cmd: CMD is the area under \|1 - f\|(: the absolute value is missing|, not 1 - CPR)"),
            "swapped": (W("""
                def cpr_and_cmd(fractions, f):
                    cpr = sum((fractions[i + 1] - fractions[i]) * (f[i] + f[i + 1]) / 2 for i in range(len(f) - 1))
                    cmd = sum((fractions[i + 1] - fractions[i]) * (abs(1 - f[i]) + abs(1 - f[i + 1])) / 2 for i in range(len(f) - 1))
                    return cmd, cpr
                """), r"cpr_and_cmd: cpr and cmd are swapped"),
        },
    },
}

# Wrong answers that a check accepts in its notebook, or rejects without saying why (a crash inside the check, a
# misleading message): {notebook: {function: {wrong answer: (source, the message it should get, why it does not)}}}.
# They run like the others and are expected to fail (strict): a fixed check makes one pass, and it then moves to WRONG.
KNOWN_GAPS: dict[str, dict[str, dict[str, tuple[str, str, str]]]] = {}


# ---------------------------------------------------------------- what the notebooks hold (read, not run)
def _exercises(path: Path) -> list[str]:
    nb = nbformat.read(path, as_version=4)
    return [name for c in nb.cells if is_exercise_cell(c) for name in exercise_functions(c.source)]


EXERCISES = {p.stem: _exercises(p) for p in LEARNER}


def _cases():
    """One case per check a learner meets, in notebook order: (notebook, function, what is run, the message's regex)."""
    cases = []
    for stem, names in EXERCISES.items():
        for name in names:
            cases.append(pytest.param(stem, name, UNFINISHED, rf"^{name} is not written yet: Exercise: ",
                                      id=f"{stem}-{name}-unfinished"))
            for label, (_, pattern) in WRONG.get(stem, {}).get(name, {}).items():
                cases.append(pytest.param(stem, name, label, pattern, id=f"{stem}-{name}-wrong: {label}"))
            for label, (_, pattern, why) in KNOWN_GAPS.get(stem, {}).get(name, {}).items():
                cases.append(pytest.param(stem, name, label, pattern, id=f"{stem}-{name}-gap: {label}",
                                          marks=pytest.mark.xfail(reason=why, strict=True)))
            cases.append(pytest.param(stem, name, SOLUTION, None, id=f"{stem}-{name}-solution"))
    return cases


def kernel_env() -> dict:
    """The offline default (``MODEL_NAME = "auto"`` gives the zoo model at once, without probing the hub), the
    sweeps at ``TUTORIAL_SIZE=quick`` (the checks are the same; the notebooks' own sweeps are smaller), claims
    reported rather than raised (a claim not met at the quick sizes must not hide the exercises after it),
    one thread per kernel (``TEST_THREADS`` to change it)."""
    env = {k: v for k, v in os.environ.items() if k not in DROP}
    threads = os.environ.get("TEST_THREADS", "1")
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TUTORIAL_SIZE="quick", TUTORIAL_CLAIMS="report",
               MPLBACKEND="Agg", PYTHONWARNINGS="ignore::DeprecationWarning", OMP_NUM_THREADS=threads,
               MKL_NUM_THREADS=threads)
    return env


@lru_cache(maxsize=None)
def learner_run(stem: str):
    wrong: dict = {}
    for table in (WRONG, KNOWN_GAPS):
        for name, slips in table.get(stem, {}).items():
            wrong.setdefault(name, {}).update({label: src for label, (src, *_) in slips.items()})
    run = run_learner_notebook(ROOT / "notebooks" / f"{stem}.ipynb", SOLUTIONS / f"{stem}.ipynb", wrong, kernel_env(),
                               stop_after_last_exercise=stem in STOP_AFTER_LAST_EXERCISE)
    slow = sorted(((o.seconds, k) for k, o in run.outcomes.items()), reverse=True)[:3]
    print(f"\n{stem}: {run.seconds:.0f} s, {len(run.outcomes)} exercise runs; slowest: "
          + ", ".join(f"{k[0]}/{k[1]} {s:.1f} s" for s, k in slow))
    return run


# ---------------------------------------------------------------- the tests
def test_every_exercise_has_wrong_answers():
    """A new exercise cannot be added without its wrong answers; a registered one must still be in its notebook."""
    assert LEARNER, "no learner notebooks found"
    problems = []
    for stem, names in EXERCISES.items():
        registered = WRONG.get(stem, {})
        for name in names:
            if not registered.get(name):
                problems.append(f"{stem}: exercise `{name}` has no wrong answer in WRONG")
        if len(names) != len(set(names)):
            problems.append(f"{stem}: an exercise function is defined in two exercise cells: {names}")
        for table, what in ((WRONG, "WRONG"), (KNOWN_GAPS, "KNOWN_GAPS")):
            for name in set(table.get(stem, {})) - set(names):
                problems.append(f"{stem}: {what} registers `{name}`, which is no exercise of the learner notebook")
        for name, gaps in KNOWN_GAPS.get(stem, {}).items():
            for label in set(gaps) & set(registered.get(name, {})):
                problems.append(f"{stem}: `{name}`'s wrong answer {label!r} is both in WRONG and in KNOWN_GAPS")
    for stem in (set(WRONG) | set(KNOWN_GAPS)) - set(EXERCISES):
        problems.append(f"notebook {stem} is registered, but is not among {sorted(EXERCISES)}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("stem,name", sorted({(s, n) for table in (WRONG, KNOWN_GAPS) for s, t in table.items() for n in t}))
def test_each_wrong_answer_defines_the_exercise_function(stem, name):
    """Each wrong answer is one ``def`` with the exercise's name and the learner's arguments."""
    import ast

    path = ROOT / "notebooks" / f"{stem}.ipynb"
    learner_args = None
    if path.exists():
        for cell in nbformat.read(path, as_version=4).cells:
            if is_exercise_cell(cell) and name in exercise_functions(cell.source):
                node = next(n for n in ast.parse(cell.source).body if getattr(n, "name", None) == name)
                learner_args = [a.arg for a in node.args.args]
    slips = {**WRONG.get(stem, {}).get(name, {}), **KNOWN_GAPS.get(stem, {}).get(name, {})}
    for label, (source, pattern, *_) in slips.items():
        body = ast.parse(source).body
        assert len(body) == 1 and isinstance(body[0], ast.FunctionDef) and body[0].name == name, (stem, name, label)
        if learner_args is not None:
            assert [a.arg for a in body[0].args.args] == learner_args, (stem, name, label)
        re.compile(pattern)


@pytest.mark.parametrize("stem,name,what,pattern", _cases())
def test_learner_meets_the_check(stem, name, what, pattern):
    """The check says "not written yet" to the cell as shipped, rejects each wrong answer with its message, and
    passes the solution."""
    run = learner_run(stem)
    outcome = run.outcomes.get((name, what))
    if outcome is None:
        pytest.fail(f"{stem} stopped before exercise `{name}` ran: {run.error}")
    if what == SOLUTION:
        assert outcome.ename is None, f"the solution of `{name}` raised {outcome.ename}: {outcome.evalue}"
        assert "passed" in outcome.text, f"the solution of `{name}` ran, but no check said it passed:\n{outcome.text}"
        return
    assert outcome.ename is not None, (f"{stem}: the check of `{name}` accepted the wrong answer {what!r}; "
                                       f"it printed:\n{outcome.text}")
    assert outcome.ename == "ExerciseError", (f"{stem}: `{name}` with the wrong answer {what!r} raised "
                                              f"{outcome.ename}, not ExerciseError: {outcome.evalue}")
    assert re.search(pattern, outcome.evalue, re.DOTALL), (f"{stem}: the check of `{name}` rejected the wrong answer "
                                                      f"{what!r} with\n  {outcome.evalue}\nwhich does not match\n  {pattern}")


@pytest.mark.parametrize("stem", [p.stem for p in LEARNER])
def test_learner_notebook_runs_to_its_end(stem):
    """With every exercise solved in turn, the learner's notebook (its prediction cells left as shipped) runs on."""
    run = learner_run(stem)
    assert run.error is None, f"{stem}: {run.error}"
