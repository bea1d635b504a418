"""Checks for notebook 01 (greater-than): probability difference, path-patching hooks, chaining two steps, sufficiency."""
from __future__ import annotations

from typing import Callable

import torch

from .common import ExerciseError, call_exercise, compare, passed


def check_prob_diff(prob_diff: Callable, task, logits) -> None:
    """``prob_diff(logits, task)`` must equal ``task.prob_diff(logits)`` per example: at END, the sum of
    p(year) over the 100 year tokens above YY minus the sum over those at or below YY (softmax over the
    full vocabulary)."""
    got = call_exercise(prob_diff, logits, task)
    if got is None:
        raise ExerciseError("prob_diff returned None: return a tensor with one value per prompt")
    expected = task.prob_diff(logits)
    got_t = torch.as_tensor(got).detach().float().cpu()
    if got_t.shape == expected.shape and not torch.allclose(got_t, expected.float().cpu(), atol=1e-4, rtol=1e-4):
        # name the usual slips before the generic mismatch message
        probs = task.final_logits(logits).float()[:, task.year_ids].softmax(-1)
        good = torch.arange(100)[None] > task.yy[:, None]
        if torch.allclose(got_t, ((probs * good).sum(1) - (probs * ~good).sum(1)).cpu(), atol=1e-4):
            raise ExerciseError("you took the softmax over the 100 year tokens only: take it over the whole "
                                "vocabulary, then pick the year tokens")
        geq = torch.arange(100)[None] >= task.yy[:, None]
        p = task.year_probs(logits).cpu()
        if torch.allclose(got_t, (p * geq).sum(1) - (p * ~geq).sum(1), atol=1e-4):
            raise ExerciseError("YY itself counts as a wrong answer: correct years are strictly greater than YY")
    compare(got_t, expected, "probability difference per example")
    passed("check_prob_diff", f"mean probability difference {expected.mean().item():.3f}")


def check_direct_path_patch(direct_path_patch: Callable, model, task, sender: str = "m1") -> None:
    """``direct_path_patch(model, task, sender)`` must return the per-example metric when only the
    direct path sender -> logits carries the corrupted value at END (as
    ``path_patch(..., senders=[sender], receivers="logits", sender_positions=task.end_pos)``)."""
    from ...core.hooks import count_hooks
    from ...methods.path_patching import path_patch

    got = call_exercise(direct_path_patch, model, task, sender)
    if count_hooks(model):
        raise ExerciseError("a hook is still attached after your function ran: use `with model.hooks(...)`")
    if got is None:
        raise ExerciseError("direct_path_patch returned None: return the metric per prompt")
    expected = path_patch(model, task.clean, task.corrupt, [sender], "logits", task.metric,
                          sender_positions=task.end_pos, logit_positions=task.end_pos)["patched"]
    expected = expected.detach().float().cpu()
    got_t = torch.as_tensor(got).detach().float().cpu()
    with torch.no_grad():
        clean_metric = task.metric(model(task.clean.to(model.cfg.device))).float().cpu()
    if got_t.shape == expected.shape and not torch.allclose(expected, clean_metric, atol=1e-4) \
            and torch.allclose(got_t, clean_metric, atol=1e-4):
        raise ExerciseError("your result equals the clean run's metric: the hook did not change anything "
                            "(is it attached to the right hook point, and does it return the patched tensor?)")
    compare(got_t, expected, f"metric per prompt with {sender} -> logits patched at END", atol=1e-3)
    passed("check_direct_path_patch", f"{sender} -> logits: mean metric {expected.float().mean().item():.3f}")


def check_sufficiency(sufficiency: Callable, model, task, components=("embed", "a0.h1", "m0", "m1")) -> None:
    """``sufficiency(model, task, components)`` must return the per-example metric when every head,
    MLP and the embedding *outside* ``components`` takes its output from the corrupted run (at every
    position) and the components themselves are recomputed on that mixed input, as
    ``circuit_sufficiency(model, task, Circuit(components))``.

    Checked on ``components`` and on the same set with ``"embed"`` toggled (removed if it is there,
    added if not), so that a version which always keeps the embedding clean -- or always corrupts it --
    gives a wrong answer on one of the two. A wrong answer is named from both results together (with
    the embedding corrupted and nothing else clean, several slips give the same fully corrupted run)."""
    from ...core.hooks import count_hooks

    comps = list(components)
    toggled = [c for c in comps if c != "embed"] if "embed" in comps else ["embed", *comps]
    results = []  # (components, learner's metric, library's evaluation)
    for case in (comps, toggled):
        got = call_exercise(sufficiency, model, task, list(case))
        if count_hooks(model):
            raise ExerciseError("a hook is still attached after your function ran: use `with model.hooks(...)`")
        if got is None:
            raise ExerciseError("sufficiency returned None: return the metric per prompt")
        results.append((case, torch.as_tensor(got).detach().float().cpu(), _sufficiency(model, task, case)))

    def close(a, b):
        b = torch.as_tensor(b).detach().float().cpu()
        return a.shape == b.shape and torch.allclose(a, b, atol=1e-3, rtol=1e-4)

    wrong_ones = [case for case, got, ev in results if not close(got, ev.per_example)]
    if wrong_ones:
        slips = [
            (("you corrupted the circuit and kept the rest clean (that is the necessity test): "
              "sufficiency corrupts everything *outside* the circuit"),
             lambda c: _necessity(model, task, c)),
            (("the embedding was not corrupted: when 'embed' is not in components, hook_embed must take the "
              "corrupted run's value, like every other component outside the circuit"),
             lambda c: _sufficiency(model, task, c if "embed" in c else ["embed", *c]).per_example),
            (("you corrupted the embedding even though 'embed' is in components: the embedding is then part of "
              "the circuit and stays clean"),
             lambda c: _sufficiency(model, task, [x for x in c if x != "embed"]).per_example),
        ]
        for message, slip in slips:
            if all(close(got, slip(case)) for case, got, _ in results):
                raise ExerciseError(f"metric per prompt with only {wrong_ones[0]} clean: {message}")
        for case, got, ev in results:
            compare(got, ev.per_example, f"metric per prompt with only {case} clean", atol=1e-3, dims=("batch",),
                    wrong=[(message, lambda slip=slip, case=case: slip(case)) for message, slip in slips])
    ev = results[0][2]
    passed("check_sufficiency", f"only {', '.join(comps)} clean: {ev.value:.3f} "
                                f"({100 * ev.fraction_of_clean:.0f}% of the full model's {ev.clean:.3f})")


def _sufficiency(model, task, comps):
    from ...core.circuits import Circuit
    from ...methods.circuit_eval import circuit_sufficiency

    return circuit_sufficiency(model, task, Circuit(list(comps), name="exercise"))


def _necessity(model, task, comps):
    from ...core.circuits import Circuit
    from ...methods.circuit_eval import circuit_necessity

    return circuit_necessity(model, task, Circuit(list(comps), name="exercise")).per_example


def _mlp_layer(model, receiver: str) -> int:
    from ...core.components import parse

    c = parse(receiver, model)
    if c.kind != "mlp":
        raise ValueError(f"receiver {receiver!r} is not an MLP; give 'm<layer>', e.g. 'm{model.cfg.n_layers - 1}'")
    return c.layer


@torch.no_grad()
def _mlp_path_variant(model, task, sender: str, receiver: str, sign: float = 1.0, frozen_ln: bool = False,
                      into: str = "mlp", all_positions: bool = False, downstream: bool = True) -> torch.Tensor:
    """Sender -> MLP ``receiver`` by hand, with hooks: the right answer (default arguments, an independent
    slow reference for the path-patching engine) and the usual slips (the other arguments).

    ``into="mlp"``: only the MLP's input sees the sender's change (recomputed through ``ln2``; ``frozen_ln``
    keeps the clean run's LayerNorm scale); ``"resid_mid"`` / ``"resid_pre"``: the change is added to the
    residual stream before the MLP / before the receiver's layer, so every later component sees it.
    ``downstream=False``: the MLP's changed output reaches the logits directly only (later layers frozen)."""
    from ...methods.lens import component_output

    layer = _mlp_layer(model, receiver)
    clean, corrupt = task.clean.to(model.cfg.device), task.corrupt.to(model.cfg.device)
    rows, end = torch.arange(clean.shape[0]), task.end_pos.to(clean.device)
    if all_positions:
        T = clean.shape[1]
        delta = torch.stack([component_output(model, corrupt, sender, torch.full_like(end, p))
                             - component_output(model, clean, sender, torch.full_like(end, p)) for p in range(T)], 1)
    else:
        delta = component_output(model, corrupt, sender, end) - component_output(model, clean, sender, end)

    def add(resid):
        resid = resid.clone()
        if all_positions:
            resid += sign * delta
        else:
            resid[rows, end] += sign * delta
        return resid

    if into in ("resid_mid", "resid_pre"):
        hook = f"blocks.{layer}.hook_{into}"
        with model.hooks(fwd_hooks=[(hook, lambda r, hook: add(r))]):
            return task.metric(model(clean))
    mid, scale = f"blocks.{layer}.hook_resid_mid", f"blocks.{layer}.ln2.hook_scale"
    _, cache = model.run_with_cache(clean, names_filter=lambda n: n in (mid, scale, f"blocks.{layer}.hook_mlp_out"))
    block = model.blocks[layer]
    x = add(cache[mid])
    if frozen_ln and scale in cache:
        x = x - x.mean(-1, keepdim=True)
        x = x / cache[scale]
        if hasattr(block.ln2, "w"):
            x = x * block.ln2.w + block.ln2.b
    else:
        x = block.ln2(x)
    new_out = block.mlp(x)
    if not downstream:
        last = f"blocks.{model.cfg.n_layers - 1}.hook_resid_post"
        change = new_out - cache[f"blocks.{layer}.hook_mlp_out"]
        with model.hooks(fwd_hooks=[(last, lambda r, hook: r + change)]):
            return task.metric(model(clean))
    with model.hooks(fwd_hooks=[(f"blocks.{layer}.hook_mlp_out", lambda out, hook: new_out)]):
        return task.metric(model(clean))


def check_path_patch_to_mlp(path_patch_to_mlp: Callable, model, task, sender: str, receiver: str) -> None:
    """``path_patch_to_mlp(model, task, sender, receiver)`` must return the per-prompt metric when the
    sender's corrupted output at END reaches *only the input of MLP* ``receiver`` (its LayerNorm recomputed),
    every other component keeps its clean output, and everything after the MLP is recomputed -- the value
    ``discover_step(model, task, receiver, "END", senders=[sender])`` holds for that sender, to 1e-5."""
    from ...core.hooks import count_hooks
    from ...methods.path_discovery import discover_step

    got = call_exercise(path_patch_to_mlp, model, task, sender, receiver)
    if count_hooks(model):
        raise ExerciseError("a hook is still attached after your function ran: use `with model.hooks(...)`")
    if got is None:
        raise ExerciseError("path_patch_to_mlp returned None: return the metric per prompt")
    step = discover_step(model, task, receiver, sender_position="END", senders=[sender], progress=False)
    expected = step.per_example[sender].detach().float().cpu()
    got_t = torch.as_tensor(got).detach().float().cpu()
    with torch.no_grad():
        clean_metric = task.metric(model(task.clean.to(model.cfg.device))).float().cpu()
    if got_t.shape == expected.shape and torch.allclose(got_t, clean_metric, atol=1e-6) \
            and not torch.allclose(expected, clean_metric, atol=1e-6):
        raise ExerciseError("your result equals the clean run's metric: the MLP's new output never reached the "
                            "model (does the hook on hook_mlp_out return the new output?)")
    v = lambda **kw: (lambda: _mlp_path_variant(model, task, sender, receiver, **kw))  # noqa: E731
    wrong = [
        ("the sign is flipped: the change to add is corrupted minus clean (the sender's corrupted output "
         "replaces its clean one)", v(sign=-1.0)),
        ("you added the change to hook_resid_mid, so every component after it saw the sender's corrupted value "
         "too (that is activation patching of the residual stream); only the MLP's input should see it",
         v(into="resid_mid")),
        ("you added the change to the receiver's hook_resid_pre: then its layer's attention and every later "
         "component see it, not only the MLP's input", v(into="resid_pre")),
        ("the LayerNorm scale was kept at the clean run's value: recompute ln2 on the patched residual "
         "(call block.ln2 on it), as the paper does", v(frozen_ln=True)),
        ("you patched the sender at every position: only END carries the change in this step",
         v(all_positions=True)),
        ("the MLP's new output was added to the final residual stream only, so later layers never saw it: replace "
         "hook_mlp_out and let the rest of the model run", v(downstream=False)),
    ]
    compare(got_t, expected, f"metric per prompt with {sender} -> {receiver} (input) patched at END",
            atol=1e-5, rtol=1e-5, wrong=wrong, dims=("batch",))
    effect = float((expected - step.baseline_examples.float().cpu()).mean())
    passed("check_path_patch_to_mlp", f"{sender} -> {receiver}: effect {effect:+.4f} on the mean metric, "
                                      "equal to discover_step's to 1e-5")


def check_end_search(end_search: Callable, model, task, threshold: float) -> None:
    """``end_search(model, task, threshold)`` chains steps 1 and 2 by hand and must return the set of
    components found at END: the senders into the logits (step 1, negative effects of at least
    ``threshold``) plus, for every MLP among them, the senders into that MLP's input (step 2)."""
    from ...methods.path_discovery import discover_step
    from ...methods.path_patching import top_senders

    got = call_exercise(end_search, model, task, threshold)
    if got is None:
        raise ExerciseError("end_search returned None: return the set of component names found at END")
    if isinstance(got, dict):
        got = set(got)
    if not isinstance(got, (set, frozenset, list, tuple)) or not all(isinstance(c, str) for c in got):
        raise ExerciseError(f"end_search should return a set of component names like {{'m1', 'a0.h3'}}; got {got!r}")
    got = set(got)
    step1 = discover_step(model, task, "logits", sender_position="END", progress=False)
    first = set(top_senders(step1, threshold=threshold, sign="negative"))
    found, into = set(first), {}
    for m in sorted(c for c in first if c.startswith("m")):
        into[m] = set(top_senders(discover_step(model, task, m, sender_position="END", progress=False),
                                  threshold=threshold, sign="negative"))
        found |= into[m]
    if got == found:
        extra = ", ".join(f"{m}: {sorted(s)}" for m, s in into.items()) or "no MLP found in step 1"
        passed("check_end_search", f"step 1 found {sorted(first)}; step 2 into {extra}")
        return
    if got == first:
        raise ExerciseError(f"you returned step 1's senders only ({sorted(first)}): for every MLP among them, run "
                            "a second step into that MLP's input and add what it finds")
    both_signs = set(top_senders(step1, threshold=threshold, sign="abs"))
    if got - found and got - found <= both_signs | {c for m in into for c in top_senders(
            discover_step(model, task, m, sender_position="END", progress=False), threshold=threshold, sign="abs")}:
        raise ExerciseError(f"you kept {sorted(got - found)}, whose effects are positive (patching them *raises* the "
                            "metric): keep only senders whose path lowers it, sign='negative'")
    missing, extra = sorted(found - got), sorted(got - found)
    raise ExerciseError("your set differs from the two steps' result: "
                        + (f"missing {missing}" if missing else "")
                        + ("; " if missing and extra else "") + (f"not found by the steps {extra}" if extra else "")
                        + (" -- step 2 runs into every MLP found in step 1 (receiver = that MLP)" if missing else ""))
